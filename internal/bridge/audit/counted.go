package audit

// Counted is ev standing for n refusals of one kind: the device API
// coalesces repeated refusals from one source (the first is recorded at
// once; repeats within a minute become one line), so a flood cannot
// rotate the log away. The line keeps ev's fields, which are those of the
// first refusal it counts, and "count": n after them. For n < 2, or an
// event that was not refused or failed, it is ev itself: a line without
// "count" stands for one write. The counting is in memory (the device
// API's): a crash of the daemon loses the repeats counted since the kind's
// last line, at most a window's, as collie(1) says; a stop writes them.
func Counted(ev Event, n int) Event {
	if r := ev.result(); n < 2 || r.status != StatusRefused && r.status != StatusFailed {
		return ev
	}
	return counted{Event: ev, n: int64(n)}
}

type counted struct {
	Event
	n int64
}

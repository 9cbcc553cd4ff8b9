package audit

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"
)

// Problem is something wrong with one line.
type Problem struct {
	File string `json:"file"` // the file's path
	Line int    `json:"line"` // 1-based; 0 for the log as a whole
	What string `json:"what"` // a sentence
}

func (p Problem) String() string {
	if p.Line == 0 {
		return fmt.Sprintf("%s: %s", p.File, p.What)
	}
	return fmt.Sprintf("%s line %d: %s", p.File, p.Line, p.What)
}

// Report is what Verify found.
type Report struct {
	Files   []string  `json:"files"` // the files checked, oldest first
	Records int       `json:"records"`
	First   time.Time `json:"first"`
	Last    time.Time `json:"last"`
	// Head is the hash of the last record: the value the next line's
	// "prev" will carry. Writing it down somewhere else (the journal, a
	// note) anchors the chain: whoever edits the log afterwards cannot
	// make Verify give the same head.
	Head string `json:"head"`
	// ContinuesFrom is set when the oldest file is a rotated file whose
	// first line follows a line in a file no longer kept (KeepRotated):
	// the "prev" it carries.
	ContinuesFrom string `json:"continuesFrom,omitempty"`
	// Torn lists writes that a crash cut short. They carry no record, the
	// chain goes on over them, and they do not make the log tampered.
	Torn []Problem `json:"torn"`
	// Problems lists tampering: a line edited, removed, inserted or moved,
	// or one that is not an audit record. The first is the first bad line.
	Problems []Problem `json:"problems"`
	// More counts problems past the ones listed (maxProblems).
	More int `json:"more,omitempty"`
	// Unfinished lists writes begun (Log.Begin) whose outcome the log
	// does not hold: the bridge stopped, probably in a crash, while the
	// agent had the write. Not tampering: the agent may or may not have
	// carried them out.
	Unfinished []Problem `json:"unfinished"`
	// Anchors is what CheckAnchors found; nil when it was not called.
	Anchors *AnchorCheck `json:"anchors,omitempty"`

	position map[string]int // record hash → its place, 1-based (CheckAnchors)
}

// Intact reports whether no problem was found.
func (r Report) Intact() bool { return len(r.Problems) == 0 }

// maxProblems is how many problems a Report lists: a scrambled log would
// otherwise list every line.
const maxProblems = 20

// fileData is one file's bytes, as read for Verify.
type fileData struct {
	path string
	data []byte
}

// entry is one line, for the chain check.
type entry struct {
	file, line int // indices: files[file], 1-based line
	rec        Record
	err        error // not a record
	torn       bool  // not a record, but what a write cut short looks like
	noNewline  bool  // the file's last bytes, without a newline
}

// VerifyFiles checks the chain through paths, oldest first, as one log:
// a rotated file's last record is followed by the first record of the
// next file.
func VerifyFiles(paths ...string) (Report, error) {
	files, err := readFiles(paths)
	if err != nil {
		return Report{}, err
	}
	return verify(files), nil
}

// Verify checks the log in the state folder dir: its rotated files, oldest
// first, then audit.log. It reads them as they are at one moment, between
// two appends. A missing log is an empty Report.
func Verify(dir string) (Report, error) {
	files, err := snapshot(dir)
	if err != nil {
		return Report{}, err
	}
	return verify(files), nil
}

// verify checks each line of files: that it is a record that keeps
// exactly A3's fields (CheckFields), and that its "prev" is the hash of
// the record before it, the first one's the hash of Genesis.
func verify(files []fileData) Report {
	var rep Report
	var entries []entry
	index := map[string]int{} // record hash → index in entries
	var lr lineReader
	for fi, f := range files {
		rep.Files = append(rep.Files, f.path)
		lines := splitLines(f.data)
		unterminated := !bytes.HasSuffix(f.data, []byte{'\n'})
		for n, raw := range lines {
			e := entry{file: fi, line: n + 1, noNewline: unterminated && n == len(lines)-1}
			e.rec, e.err = lr.parse(raw)
			if e.err != nil {
				e.torn = e.noNewline && cutShort(raw, e.err)
			} else if _, dup := index[e.rec.Hash]; !dup {
				index[e.rec.Hash] = len(entries)
			}
			entries = append(entries, e)
		}
	}
	where := func(e entry) (string, int) { return files[e.file].path, e.line }
	name := func(e entry, from entry) string {
		if e.file == from.file {
			return fmt.Sprintf("line %d", e.line)
		}
		return fmt.Sprintf("line %d of %s", e.line, filepath.Base(files[e.file].path))
	}
	problem := func(e entry, format string, a ...any) {
		if len(rep.Problems) == maxProblems {
			rep.More++
			return
		}
		f, l := where(e)
		rep.Problems = append(rep.Problems, Problem{f, l, fmt.Sprintf(format, a...)})
	}
	last := -1                 // index of the last record
	begun := map[string]int{}  // hash of a pending line → its index in entries
	ended := map[string]bool{} // pending lines ended
	for i, e := range entries {
		if e.err != nil {
			f, l := where(e)
			switch {
			case e.torn && e.file == len(files)-1:
				rep.Torn = append(rep.Torn, Problem{f, l, "a write was cut short (no newline at the end of the file), probably by a crash; the next start of the daemon cuts it off"})
			case e.torn:
				problem(e, "this looks like a write cut short, but %s comes after it: Collie cuts a torn write off before it writes on, so only the end of the newest file can be torn", filepath.Base(files[e.file+1].path))
			case cutShort(splitLines(files[e.file].data)[e.line-1], e.err):
				problem(e, "a line cut short in the middle of the log, which Collie never leaves (only the end of the newest file can be torn): %v", e.err)
			default:
				problem(e, "this is not an audit record: %v", e.err)
			}
			continue
		}
		if err := CheckFields(e.rec); err != nil {
			problem(e, "the record is not as Collie writes it: %v", err)
		}
		if e.rec.Result() == StatusPending {
			begun[e.rec.Hash] = i
		} else if intent, ok := e.rec.Get("intent").(string); ok {
			j, known := begun[intent]
			switch {
			case !known:
				problem(e, "this record ends a write begun at a line the log does not hold before it")
			case ended[intent]:
				problem(e, "this record ends a write that %s ended already", name(entries[j], e))
			case !sameWrite(entries[j].rec, e.rec):
				problem(e, "this record ends the write begun at %s, but for another event, agent, device or request", name(entries[j], e))
			}
			ended[intent] = true
		}
		switch {
		case last < 0 && e.rec.Prev == GenesisPrev:
		case last < 0 && isRotated(files[e.file].path):
			rep.ContinuesFrom = e.rec.Prev
		case e.rec.Prev == GenesisPrev:
			problem(e, "this record starts a chain (its prev is the genesis), yet records come before it: the files were put in another order, or another log was joined on")
		case last < 0:
			problem(e, "the first record does not start the chain: records before it were removed, or it was edited (a log that continues a rotated file needs that file before it)")
		case e.rec.Prev != entries[last].rec.Hash:
			prev := entries[last]
			j, known := index[e.rec.Prev]
			switch {
			case known && j < last:
				problem(e, "this record follows %s, not %s: the records after %s were inserted, or this one was moved here", name(entries[j], e), name(prev, e), name(entries[j], e))
			case known && j > i:
				problem(e, "this record follows %s, which comes after it: records were reordered", name(entries[j], e))
			default:
				problem(e, "this record does not follow %s: %s was edited, or records between them were removed", name(prev, e), name(prev, e))
			}
		}
		if rep.Records == 0 {
			rep.First = e.rec.Time
		}
		rep.Records++
		if rep.position == nil {
			rep.position = map[string]int{}
		}
		rep.position[e.rec.Hash] = rep.Records
		rep.Last = e.rec.Time
		rep.Head = e.rec.Hash
		last = i
	}
	for _, i := range begun {
		if e := entries[i]; !ended[e.rec.Hash] {
			f, l := where(e)
			rep.Unfinished = append(rep.Unfinished, Problem{f, l, "outcome unknown: the bridge stopped (or the write is still in flight) after it forwarded this " + e.rec.Event + " to the agent, which may or may not have carried it out"})
		}
	}
	slices.SortFunc(rep.Unfinished, func(a, b Problem) int {
		return cmp.Or(slices.Index(rep.Files, a.File)-slices.Index(rep.Files, b.File), a.Line-b.Line)
	})
	if rep.Head == "" {
		rep.Head = GenesisPrev
	}
	return rep
}

// sameWrite reports whether end, a line with an intent, is about the
// same write as begin, the pending line it names.
func sameWrite(begin, end Record) bool {
	id := func(r Record) any { return r.Get("requestId") }
	return begin.Event == end.Event && begin.Session == end.Session && begin.Device == end.Device && id(begin) == id(end)
}

// cutShort reports whether raw, a line that ParseLine refused with err,
// is what a write cut short leaves: the start of a line as Collie writes
// it (beginning like {"time":" and ending before its JSON does), or NUL
// bytes only, which a crash leaves where the file's size reached the disk
// before its data.
func cutShort(raw []byte, err error) bool {
	const start = `{"time":"`
	if len(raw) == 0 {
		return false
	}
	if bytes.HasPrefix(raw, []byte(start)) || bytes.HasPrefix([]byte(start), raw) {
		return errors.Is(err, errNotWhole) || len(raw) < len(start)
	}
	return len(bytes.Trim(raw, "\x00")) == 0
}

// splitLines splits data at newlines; the last piece is a line only when
// it is not empty (a file that ends without a newline).
func splitLines(data []byte) [][]byte {
	lines := bytes.Split(data, []byte{'\n'})
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	return lines
}

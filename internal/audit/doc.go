// Package audit records every write from a paired device to a durable
// agent (A1-A5) and keeps a receipt of each tap (A6).
//
// # Use
//
// The daemon opens one Log on the state folder and records each write,
// refused ones included, after it knows the outcome, with one call:
//
//	content, err := audit.ParseContent(os.Getenv("COLLIE_AUDIT_CONTENT"))
//	log, opened, err := audit.Open(audit.Options{Dir: paths.State, Content: content})
//	// log one line per opened.Tightened, and one if opened.Torn
//	who := audit.Who{Session: agentName, Device: deviceID}
//	rc, err := log.Record(who, audit.AnswerOf(req, audit.OK))
//	rc, err := log.Record(who, audit.SendOf(req, audit.Refused("text-too-long")))
//
// Record returns an error to log and otherwise ignore: the log blocks
// nothing (A5). The receipt it returns for a tap can go back to the device
// at once (Receipt.ID); later the device fetches it with Receipt or
// Receipts.
//
// The events are a closed set, a type each, that write exactly A3's
// fields. No event has a field for typed words: an answer keeps its option
// ids or the kind of answer (Answered), built from the request by
// AnsweredOf, which never reads the text or the values.
//
// # audit.log
//
// One JSON object a line, UTF-8, "\n" after each, in this order: time
// (RFC 3339, UTC, milliseconds), session, device, event, the event's
// fields in A3's order, result and reason, prev. See the schemas in
// parse.go and testdata/audit.log, which TestGolden pins byte for byte.
// Strings are cut to fixed limits (ids 128 bytes, names 256, reasons 256,
// a send preview 120 characters) and control, invisible and direction
// characters are written as \u escapes, so a line is short, whole and
// safe to cat.
//
// # The chain
//
// prev is the hex SHA-256 of the previous line's bytes without its
// newline; the first line's is GenesisPrev, the SHA-256 of Genesis
// ("collie audit log v1"). Verify names the first line whose prev is not
// the hash of the record before it, and says whether that looks like an
// edit or removal (prev matches no line), an insertion (it matches an
// earlier line) or a reorder (a later one), and checks each record's
// fields against A3 (CheckFields). It cannot see an edit of the last line
// or a log rewritten whole with every prev recomputed; both change
// Report.Head, which is why collie audit verify prints it: noted
// elsewhere, the head anchors the chain.
//
// # Appends and torn lines
//
// Each line is one write(2) on a file opened with O_APPEND, under the
// Log's mutex and an exclusive flock(2) on audit.lock, which other
// processes writing the same log take too. Under the lock one lstat of
// audit.log tells whether another process appended (its size is not the
// one we left) or rotated it (its inode changed): then the Log reads the
// new head or reopens. A crash during a write can leave a last line
// without its newline. Open keeps those bytes (the log is never
// truncated, so it can be append-only, chattr +a) and notes Opened.Torn;
// the next write starts with "\n", so the fragment stands on a line of
// its own, and its prev is the hash of the last whole record, which Open
// finds from the end of the file. Verify reports such a fragment in
// Report.Torn, not as tampering: it is recognised as what a cut-short
// write looks like (it begins with {"time":" and does not end with }),
// and a line of junk put in the place of a removed record still breaks
// the chain at the next line. A fragment that is a whole record without
// its newline counts as a record.
//
// # fsync
//
// By default Record waits until its line is on disk, but at most SyncWait
// (100 ms): a syncer goroutine runs fsync rounds, each covering every line
// written before it began, so concurrent Records share one fsync (group
// commit), and a slow disk delays a write by SyncWait at most, after which
// the line is written and reaches the disk with the next round. Only
// audit.log is synced per line: receipts are an index of it, and Open
// files again any receipt a crash lost (Opened.Recovered). Measured on
// the development VM (ext4 on a virtual disk, BenchmarkRecord): 0.3 to
// 0.6 ms an append with fsync one at a time (1,600 to 3,000 a second),
// 11,000 to 19,000 appends a second from 16 goroutines sharing fsync
// rounds, and 20 to 30 us without fsync, which is six system calls
// (flock, unlock, two lstat, two write) at this VM's 3 to 5 us each.
// Verify reads about 7 us a line (BenchmarkVerify). Device
// writes come at the pace of taps, so fsync on costs nothing a human
// notices and keeps every acknowledged write on disk; Options.NoSync
// turns it off.
//
// # Rotation
//
// Before a line would take audit.log past MaxBytes (16 MiB) it is synced
// and renamed audit.log.<UTC time, 20060102T150405.000Z>, and a new
// audit.log begins whose first prev is the hash of the old file's last
// record. Verify and Read take the rotated files oldest first (their names
// sort by time), then audit.log, as one chain. KeepRotated (8) rotated
// files are kept, the oldest removed; when the oldest kept file does not
// start at the genesis, Verify notes Report.ContinuesFrom instead of a
// problem, since only a rotated file may begin that way. audit.log that
// does not start at the genesis with no rotated file before it, or a
// file missing from the middle, is a problem.
//
// # Receipts
//
// receipts.jsonl (0600) holds one receipt a line, oldest first: id (the
// hash of the tap's line, which is also the next line's prev), time,
// device, session, event, requestId, result. Retention: MaxAge (30 days)
// and the newest MaxCount (20,000). Both are enforced on every lookup;
// the file is rewritten without the receipts past them (a new file,
// synced, renamed over) at Open, when a day has passed since the last
// prune (checked at every Record and hourly by a timer, against the
// Log's clock), and when it holds MaxCount/2 lines more than it keeps.
//
// # Masking
//
// With ContentNone every string among an event's fields becomes
// "(masked)" but the ids: requestId, question, revision, turn,
// conversation, space, tab, actionId, starterId and result (and steer, a
// boolean). The preview, new names, option ids, the answer kind and the
// reason are masked; time, session, device, event and prev stay.
package audit

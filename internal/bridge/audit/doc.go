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
//	// log one warning per opened.Tightened and per opened.Repaired
//	who := audit.Who{Session: agentName, Device: deviceID}
//	rc, err := log.Record(who, audit.AnswerOf(req, audit.OK))
//	rc, err := log.Record(who, audit.SendOf(req, audit.Refused("text-too-long")))
//
// A write forwarded to the agent is noted before it goes and its outcome
// after (see "Writes in flight"):
//
//	p, err := log.Begin(who, audit.SendOf(req, audit.Result{}))
//	// forward the write to the agent
//	rc, err := p.End(audit.OK) // or audit.Failed(reason), audit.Refused(reason)
//
// Record and Begin return an error to log and otherwise ignore: the log
// blocks nothing (A5). The receipt it returns for a tap can go back to the device
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
// schema.go and testdata/audit.log, which TestGolden pins byte for byte.
// Strings are cut to fixed limits (ids 128 bytes, names 256, reasons 256,
// a send preview 120 characters) and control, invisible and direction
// characters are written as \u escapes, so a line is short, whole and
// safe to cat.
//
// # Reading a line
//
// ParseLine accepts a line only byte for byte as the writer writes it:
// keys in their exact case, each once, time, session, device and event
// first and prev last, the event's fields in A3's order, no whitespace,
// strings escaped exactly as appendString escapes them, numbers and the
// time in their one form. Verify, collie audit, the writer's own start
// (readHead) and the receipts' recovery all read lines with it, so a line
// reformatted, with a CR or a space added, a key in another case or given
// twice, a NUL, or a blank line is never read some other way: it is not a
// record, and Verify names its file and line. receipts.jsonl is read the
// same way (parseReceipt).
//
// It gets there with no JSON scanner of its own: it decodes the line with
// jsontext (go-json-experiment, the proposed encoding/json/v2: a key
// given twice refused), encodes the record again as the writer does
// (appendRecord) and compares the bytes, so the only form it accepts is
// the writer's by construction; at the first byte that differs it says
// what the writer would have written there. The one character with two
// forms is U+FFFD: a real one is written as it is, invalid UTF-8 as
// \ufffd, and both read back. receipts.jsonl is decoded with
// internal/protocol/jsonstrict and compared the same way. Measured side by side
// (BenchmarkParseLineSideBySide), this reads a line in 1.0 to 1.3 times
// the time the hand-written scanner it replaced took, and in 0.75 times
// what encoding/json takes to read it into a map.
//
// The writer (encoder, appendString) is written by hand because of the
// format, not for speed: neither encoding/json nor jsontext escapes the
// direction, invisible and C1 characters. Side by side
// (BenchmarkEncodeSideBySide) they take 1.3 and 1.6 times its 1 to 1.4
// us a line, against 20 us or more for an append. FuzzAppendString and
// FuzzChain hold its output to encoding/json.
//
// # The chain
//
// prev is the hex SHA-256 of the previous line's bytes without its
// newline; the first line's is GenesisPrev, the SHA-256 of Genesis
// ("collie audit log v1"). Verify names the first line whose prev is not
// the hash of the record before it, and says whether that looks like an
// edit or removal (prev matches no line), an insertion (it matches an
// earlier line) or a reorder (a later one, or a genesis record after
// others: rotated files put in another order), and checks each record's
// fields against A3 (CheckFields). By itself the chain cannot see the
// last records removed, an edit of the last line, or a log rewritten
// whole with every prev recomputed: the chain has no key. Anchors do.
//
// # Anchors
//
// With Options.Anchor set, the Log hands out the chain's head (the hash
// of the newest record, its time and the state folder) every AnchorEvery
// records (16) and at Close, after the line is written and, with fsync
// on, on disk or SyncWait passed. The daemon writes each to the journal,
// MESSAGE_ID journal.MsgAuditAnchor, and collie audit verify reads them
// back with journalctl (entries of the user's own _UID, which journald
// sets) and calls Report.CheckAnchors: every anchored record must be in
// the log. This catches
//   - truncation after an anchor: records removed from the end, up to or
//     past an anchored one;
//   - the log rewritten with its hashes recomputed anywhere before the
//     newest anchor (the anchored record's hash covers everything before
//     it), or removed or emptied.
//
// It cannot catch
//   - records after the newest anchor removed or changed (up to 15, more
//     if the daemon was killed before Close): Verify reports how many
//     records are not anchored yet (AnchorCheck.Unanchored);
//   - an attacker who can also rewrite or remove the journal (root, or
//     whoever can write its files; journalctl --verify checks the
//     journal's own seal where Forward Secure Sealing is set up);
//   - anything once the journal has rotated the anchors away (its size
//     and time limits), or where no journal runs: Verify then says so
//     and checks the file on its own; it does not fail for that.
//
// Forged extra anchors can only make Verify fail, never pass. An anchor
// older than every record of a log that continues from a rotated file no
// longer kept is counted apart (AnchorCheck.RotatedAway).
//
// # Appends and torn lines
//
// Each line is one write(2) on a file opened with O_APPEND, under the
// Log's mutex and an exclusive flock(2) on audit.lock, which other
// processes writing the same log take too. Under the lock one lstat of
// audit.log tells whether another process appended (its size is not the
// one we left) or rotated it (its inode changed): then the Log reads the
// new head or reopens. A write that fails (a full disk: part of a line,
// or all of it but the newline) is cut back off (ftruncate to the old
// size), so the file is as it was and the next line chains to the record
// before; if even that fails, the next append mends the end first or
// writes nothing. No line is ever written after a fragment.
//
// A crash during a write can still leave a last line without its
// newline. Before writing on, Open (and an append that finds another
// process left one) mends the end of audit.log and reports it
// (Opened.Repaired, Options.OnRepair: a warning line each): a fragment
// that looks like a write cut short (the start of {"time":", or NUL
// bytes, which a crash leaves where the size reached the disk before the
// data) is cut off, and the warning quotes what was cut; a whole record
// without its newline gets it; anything else is kept as evidence, ended
// with a newline, and Verify names it. So only the last line of the
// newest file can be torn: Verify reports it in Report.Torn, not as
// tampering; anything else that is not a record, a torn-looking line in
// the middle of a file or at the end of a rotated one included, is a
// problem. Cutting a fragment off truncates the file, so a log made
// append-only (chattr +a) with a torn end makes Open fail, saying so.
//
// # Writes in flight
//
// The log promises a line for every write the agent could have carried
// out. Begin writes the event's line with the result "pending" before the
// write is forwarded (and waits for fsync like Record); End writes it
// again with the outcome and "intent", the hash of the pending line, and
// files the receipt. A crash in between leaves a pending line without an
// outcome: the agent may or may not have carried the write out. Verify
// lists it in Report.Unfinished ("outcome unknown: the bridge stopped"),
// not as tampering, and collie audit shows it once, with the result
// "unknown"; a pending line whose outcome follows is shown only as its
// outcome. Open files such a write's receipt with the result "unknown"
// (StatusUnknown), never "pending". An outcome naming no pending line
// before it, or one ended twice, is a problem. Writes refused before they reach the agent have
// no pending line: Record writes their one line.
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
// Verify reads 7 to 11 us a line, and a full audit.log (16 MiB, about
// 55,000 lines) in 0.55 to 0.7 s (BenchmarkVerify), 1.2 times what it
// took with the hand-written scanner that read lines before. Device
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

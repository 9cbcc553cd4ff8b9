package audit

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// Repair is something wrong that the Log found at the end of audit.log
// and mended before writing on: a write cut short (a crash, a full disk)
// or a last line that is no record. Open returns those it found in
// Opened.Repaired; those found later (another process that writes the
// same log crashed mid-line) go to Options.OnRepair. Each is for one
// warning line.
type Repair struct {
	Path   string
	Offset int64  // where the bytes concerned begin
	Cut    []byte // the bytes cut off, nil when none were
	What   string // a sentence
}

func (r Repair) String() string {
	return fmt.Sprintf("%s at byte %d: %s", r.Path, r.Offset, r.What)
}

// shownCut is at most the first 64 bytes of cut, quoted, for a message.
func shownCut(cut []byte) string {
	if len(cut) > 64 {
		return strconv.QuoteToASCII(string(cut[:64])) + "…"
	}
	return strconv.QuoteToASCII(string(cut))
}

// readHead finds where the chain goes on: the hash of the last whole
// record of audit.log or, when it has none, of the newest rotated file
// that has one; the genesis when there is none. First it mends the end of
// audit.log (mendTail), so that no line is ever written after a fragment.
// Without any record on disk the head stays as it is, so a log removed
// while the daemon runs goes on from the last line written, and Verify
// sees that lines are missing. Caller holds the flock.
func (l *Log) readHead(repaired func(Repair)) error {
	fi, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", l.path, err)
	}
	l.fi, l.size = fi, fi.Size()
	data := make([]byte, l.size)
	rf, err := os.Open(l.path)
	if err == nil {
		_, err = rf.ReadAt(data, 0)
		rf.Close()
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", l.path, err)
	}
	var noted bool // mendTail told of the last line already
	if data, noted, err = l.mendTail(data, repaired); err != nil {
		return err
	}
	if noted {
		repaired = nil
	}
	if h, ok := l.lastRecord(data, l.path, repaired); ok {
		l.head = h
		return nil
	}
	paths, err := Files(l.opts.Dir)
	if err != nil {
		return err
	}
	for i := len(paths) - 1; i >= 0; i-- {
		if paths[i] == l.path {
			continue
		}
		data, err := os.ReadFile(paths[i])
		if err != nil {
			return fmt.Errorf("read %s: %w", paths[i], err)
		}
		if h, ok := l.lastRecord(data, paths[i], nil); ok {
			l.head = h
			return nil
		}
	}
	return nil
}

// mendTail makes data, the whole of audit.log, end in a newline, and
// returns it as it is then. A last line without its newline is
//   - a whole record (the write stopped before its last byte): its newline
//     is added;
//   - what a write cut short leaves (looksTorn): it is cut off, the file
//     truncated to the end of the line before;
//   - anything else, which Collie did not write: it is kept as evidence
//     and ended with a newline, and Verify names it.
//
// Each is reported to repaired. An error (the disk still full, a file
// that cannot be truncated) is returned, and the caller writes nothing.
func (l *Log) mendTail(data []byte, repaired func(Repair)) ([]byte, bool, error) {
	if len(data) == 0 || data[len(data)-1] == '\n' {
		return data, false, nil
	}
	start := bytes.LastIndexByte(data, '\n') + 1
	tail := data[start:]
	rep := Repair{Path: l.path, Offset: int64(start)}
	_, perr := ParseLine(tail)
	if perr != nil && cutShort(tail, perr) {
		if err := l.f.Truncate(int64(start)); err != nil {
			return nil, false, fmt.Errorf("audit: %s ends in a write cut short (%d bytes at byte %d) that cannot be cut off: %w; free some space on the disk, or remove the append-only attribute (chattr -a), and start again", l.path, len(tail), start, err)
		}
		l.size = int64(start)
		rep.Cut = bytes.Clone(tail)
		rep.What = fmt.Sprintf("cut off %d bytes of a write cut short (a crash or a full disk): %s", len(tail), shownCut(tail))
		repaired(rep)
		return data[:start], false, nil
	}
	if _, err := l.f.Write([]byte{'\n'}); err != nil {
		l.f.Truncate(l.size)
		return nil, false, fmt.Errorf("audit: end the last line of %s with its newline: %w; check that the disk has room", l.path, err)
	}
	l.size++
	if perr == nil {
		rep.What = "the last record lacked its newline (its write stopped one byte short); added it"
	} else {
		rep.What = fmt.Sprintf("the last line, without a newline, is not an audit record and not a torn write: kept, and ended with a newline; collie audit verify names it (%v)", perr)
	}
	repaired(rep)
	return append(data, '\n'), perr != nil, nil
}

// lastRecord is the hash of the last record of data. When its last line
// is not a record (someone added it), the chain goes on from the record
// before, and repaired hears of it, when not nil; Verify names that line.
func (l *Log) lastRecord(data []byte, path string, repaired func(Repair)) (string, bool) {
	ls := splitLines(data)
	for k := len(ls) - 1; k >= 0; k-- {
		_, err := ParseLine(ls[k])
		if err == nil {
			return hashLine(ls[k]), true
		}
		if repaired != nil && k == len(ls)-1 {
			at := int64(len(data) - len(ls[k]) - 1)
			repaired(Repair{Path: path, Offset: at, What: fmt.Sprintf("the last line is not an audit record (%v); the next line goes on from the record before it, and collie audit verify names it", err)})
		}
	}
	return "", false
}

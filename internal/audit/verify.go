package audit

import (
	"bytes"
	"fmt"
	"path/filepath"
	"time"
)

// Problem is something wrong with one line.
type Problem struct {
	File string `json:"file"` // the file's path
	Line int    `json:"line"` // 1-based
	What string `json:"what"` // a sentence
}

func (p Problem) String() string {
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
	for fi, f := range files {
		rep.Files = append(rep.Files, f.path)
		lines := splitLines(f.data)
		unterminated := !bytes.HasSuffix(f.data, []byte{'\n'})
		for n, raw := range lines {
			e := entry{file: fi, line: n + 1, noNewline: unterminated && n == len(lines)-1}
			e.rec, e.err = ParseLine(raw)
			if e.err != nil {
				e.torn = bytes.HasPrefix(raw, []byte(`{"time":"`)) && !bytes.HasSuffix(raw, []byte("}"))
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
	last := -1 // index of the last record
	for i, e := range entries {
		if e.err != nil {
			f, l := where(e)
			switch {
			case e.torn && e.noNewline:
				rep.Torn = append(rep.Torn, Problem{f, l, "a write was cut short (no newline at the end of the file), probably by a crash; the next line Collie writes goes on from the last whole record"})
			case e.torn:
				rep.Torn = append(rep.Torn, Problem{f, l, "a write was cut short, probably by a crash, and the chain goes on over it"})
			default:
				problem(e, "this is not an audit record: %v", e.err)
			}
			continue
		}
		if err := CheckFields(e.rec); err != nil {
			problem(e, "the record is not as Collie writes it: %v", err)
		}
		switch {
		case last < 0 && e.rec.Prev == GenesisPrev:
		case last < 0 && isRotated(files[e.file].path):
			rep.ContinuesFrom = e.rec.Prev
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
		rep.Last = e.rec.Time
		rep.Head = e.rec.Hash
		last = i
	}
	if rep.Head == "" {
		rep.Head = GenesisPrev
	}
	return rep
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

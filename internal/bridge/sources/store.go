package sources

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/collie-linux/collie/internal/linux/atomicfile"
	"github.com/collie-linux/collie/internal/protocol/jsonstrict"
)

// maxFileSize caps what Load reads: far more than any list of agents needs.
const maxFileSize = 1 << 20

// Load reads the sources file at path. A missing file is an empty list.
//
// A file Load cannot use is an error that names it and says to fix or remove
// it. The error never quotes the file: it may hold tokens.
func Load(path string) (File, error) {
	atomicfile.RemoveStale(path) // a save killed midway leaves a temp file that may hold a token
	data, err := readFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return File{Version: Version}, nil
	}
	if err != nil {
		return File{}, fmt.Errorf("load sources: %w", err)
	}
	// A newer Collie may have added fields: look at the version first, so
	// the error says to upgrade rather than that a field is unknown.
	var head struct {
		Version int `json:"version"`
	}
	if jsonstrict.Unmarshal(data, &head, jsonstrict.Open) == nil && head.Version > Version {
		return File{}, fmt.Errorf("load sources: %s has version %d, newer than this Collie reads (%d); upgrade Collie, or fix or remove %s", path, head.Version, Version, path)
	}
	f, problem := decode(data)
	if problem == "" {
		problem = checkVersion(f.Version)
	}
	if problem == "" {
		f.refuseSocketPaths(path)
		if err := f.Validate(); err != nil {
			problem = "has a bad entry (" + err.Error() + ")"
		}
	}
	if problem != "" {
		return File{}, fmt.Errorf("load sources: %s %s; fix or remove %s", path, problem, path)
	}
	return f, nil
}

func readFile(path string) ([]byte, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	info, err := fd.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file; remove it", path)
	}
	data, err := io.ReadAll(io.LimitReader(fd, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s is larger than 1 MiB; fix or remove %s", path, path)
	}
	return data, nil
}

// decode parses data as a closed schema (jsonstrict: names in their exact
// case, none twice, none unknown, nothing after the value, valid UTF-8).
// What goes wrong comes back as a phrase without any of the file's
// content, only where: the file holds tokens.
func decode(data []byte) (f File, problem string) {
	err := jsonstrict.Unmarshal(data, &f)
	if err == nil {
		return f, ""
	}
	var e *jsonstrict.Error
	if !errors.As(err, &e) {
		return File{}, "is not a sources file"
	}
	line, col := position(data, e.Offset)
	at := fmt.Sprintf("(line %d, column %d)", line, col)
	switch e.Kind {
	case jsonstrict.Empty, jsonstrict.Truncated:
		return File{}, "is empty or cut short"
	case jsonstrict.Trailing:
		return File{}, "has something after its JSON value"
	case jsonstrict.UnknownMember:
		return File{}, `has a field Collie does not know ` + at + ` (it knows "version" and "sources", and "name", "socket", "url", "token" and "caFile" in each source, written in exactly that case)`
	case jsonstrict.DuplicateName:
		if knownField(e.Name()) {
			return File{}, fmt.Sprintf("has %q twice in one object %s", e.Name(), at)
		}
		return File{}, "has a field twice in one object " + at
	case jsonstrict.InvalidUTF8:
		return File{}, "has text that is not valid UTF-8 " + at
	case jsonstrict.WrongType:
		return File{}, fmt.Sprintf("has a JSON %s at %s, where it needs %s", strings.TrimPrefix(strings.TrimPrefix(e.Got, "a "), "an "), fieldPath(e.Pointer), strings.Replace(e.Want, "an array", "a list", 1))
	}
	return File{}, "is not valid JSON " + at
}

// fieldPath names the field a JSON pointer leads to as "sources.token",
// or "the top". The pointer names only fields Collie knows and list
// indexes (an unknown field is refused before its value is looked at), and
// it keeps only the known names.
func fieldPath(ptr string) string {
	var names []string
	for _, tok := range strings.Split(ptr, "/") {
		if knownField(tok) {
			names = append(names, tok)
		}
	}
	if len(names) == 0 {
		return "the top"
	}
	return strings.Join(names, ".")
}

// knownField reports whether name is a member of the sources file, the only
// names an error may quote.
func knownField(name string) bool {
	switch name {
	case "version", "sources", "name", "socket", "url", "token", "caFile":
		return true
	}
	return false
}

// position turns a byte offset into a 1-based line and column.
func position(data []byte, offset int64) (line, col int) {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	before := data[:offset]
	line = 1 + bytes.Count(before, []byte{'\n'})
	col = int(offset) - bytes.LastIndexByte(before, '\n')
	return line, col
}

func checkVersion(v int) string {
	switch v {
	case Version:
		return ""
	case 0:
		return fmt.Sprintf(`has no "version": %d`, Version)
	}
	return fmt.Sprintf("has version %d; this Collie reads version %d", v, Version)
}

// Save writes f to path atomically: a reader sees the old file or the new
// one, never a part, and a failed save leaves the old file as it was. The
// file gets mode 0600; its folder is made with mode 0700 when missing.
func Save(path string, f File) error {
	return save(path, f, writeAll)
}

func writeAll(w io.Writer, data []byte) error {
	_, err := w.Write(data)
	return err
}

// save is Save with the write step as a parameter, so tests can make it fail.
func save(path string, f File, write func(io.Writer, []byte) error) error {
	f.Version = Version
	if f.Sources == nil {
		f.Sources = []Source{} // "sources": [] rather than null
	}
	if err := f.Validate(); err != nil {
		return fmt.Errorf("save sources: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep & in URLs readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return fmt.Errorf("save sources: %w", err)
	}

	if err := atomicfile.WriteWith(path, buf.Bytes(), write); err != nil {
		return fmt.Errorf("save sources: %w", err)
	}
	return nil
}

// Update changes the sources file under a lock, so that concurrent updates,
// such as two `collie durable attach` at once, never lose one another's
// change. It loads the file, calls fn and saves the result; when fn returns
// an error, the file is left as it was and Update returns that error.
//
// The lock is path+".lock", mode 0600, which stays beside the file: removing
// it would let two updaters lock two different files.
func Update(path string, fn func(*File) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("update sources: %w", err)
	}
	unlock, err := lockFile(path + ".lock")
	if err != nil {
		return fmt.Errorf("update sources: %w", err)
	}
	defer unlock()
	f, err := Load(path)
	if err != nil {
		return err
	}
	if err := fn(&f); err != nil {
		return err
	}
	return Save(path, f)
}

// Tighten sets the sources file at path to mode 0600 when group or others
// have any permission on it, and says whether it did and what the mode was,
// so the daemon can log one line (K5). A missing file needs nothing.
//
// On Windows, files have no Unix modes (their ACLs decide), so Tighten does
// nothing there.
func Tighten(path string) (tightened bool, oldMode fs.FileMode, err error) {
	fd, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, 0, nil
	}
	if err != nil {
		return false, 0, fmt.Errorf("tighten sources: %w", err)
	}
	defer fd.Close()
	// Stat and chmod the open file, not the path, so both act on one file.
	info, err := fd.Stat()
	if err != nil {
		return false, 0, fmt.Errorf("tighten sources: %w", err)
	}
	oldMode = info.Mode().Perm()
	if runtime.GOOS == "windows" || oldMode&0o077 == 0 {
		return false, oldMode, nil
	}
	if err := fd.Chmod(0o600); err != nil {
		return false, oldMode, fmt.Errorf("tighten sources: %w", err)
	}
	return true, oldMode, nil
}

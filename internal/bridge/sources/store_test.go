package sources

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestLoad(t *testing.T) {
	t.Run("K5_missing_file_is_empty", func(t *testing.T) {
		f, err := Load(filepath.Join(t.TempDir(), "none", "sources.json"))
		if err != nil {
			t.Fatal(err)
		}
		if f.Version != Version || len(f.Sources) != 0 {
			t.Errorf("Load(missing) = %+v, want an empty version-%d file", f, Version)
		}
	})

	t.Run("K5_example_file", func(t *testing.T) {
		f, err := Load(filepath.Join("testdata", "sources.json"))
		if err != nil {
			t.Fatal(err)
		}
		want := []Source{
			{Name: "desk", Socket: "/run/user/1000/desk/app.sock"},
			{Name: "cloud-1", URL: "https://agent.example.com/collie", Token: token},
		}
		if len(f.Sources) != len(want) || f.Sources[0] != want[0] || f.Sources[1] != want[1] {
			t.Errorf("Load = %+v, want %+v", f.Sources, want)
		}
	})
}

// TestLoadBroken checks that a file Load cannot use gives an error that
// names the file and the fix, and never quotes the file (K5).
func TestLoadBroken(t *testing.T) {
	const tok = `"token": "` + token + `"`
	tests := []struct {
		name    string
		content string
		want    string // after "load sources: <path> "; "; fix or remove <path>" follows
	}{
		{"K5_syntax_error", "{\n  \"version\": 1,\n  \"sources\": [{\"name\": \"a\", \"url\": \"https://a\", \"token\": " + token + "}]\n}\n",
			"is not valid JSON (line 3, column 59)"},
		{"K5_cut_short", `{"version": 1, "sources": [{"name": "a", "url": "https://a", ` + tok,
			"is empty or cut short"},
		{"K5_empty_file", "", "is empty or cut short"},
		{"K5_unknown_field", `{"version": 1, "sources": [{"name": "a", "url": "https://a", "` + token + `": 1}]}`,
			`has a field Collie does not know (line 1, column 62) (it knows "version" and "sources", and "name", "socket", "url", "token" and "caFile" in each source, written in exactly that case)`},
		{"K5_unknown_top_field", `{"version": 1, "sources": [], "tokens": ["` + token + `"]}`,
			`has a field Collie does not know (line 1, column 31) (it knows "version" and "sources", and "name", "socket", "url", "token" and "caFile" in each source, written in exactly that case)`},
		{"K5_wrong_type", `{"version": 1, "sources": [{"name": "a", "url": "https://a", "token": 12345678901234567890}]}`,
			"has a JSON number at sources.token, where it needs a string"},
		{"K5_not_an_object", `["` + token + `"]`, "has a JSON array at the top, where it needs an object"},
		{"K5_sources_not_a_list", `{"version": 1, "sources": {}}`, "has a JSON object at sources, where it needs a list"},
		{"K5_trailing_data", `{"version": 1, "sources": []} {"` + token + `": 1}`, "has something after its JSON value"},
		{"K5_trailing_bracket", `{"version": 1, "sources": []}]`, "has something after its JSON value"},
		{"K5_no_version", `{"sources": []}`, `has no "version": 1`},
		{"X_wrong_case_field", `{"version": 1, "sources": [{"Name": "a", "socket": "/s"}]}`,
			`has a field Collie does not know (line 1, column 29) (it knows "version" and "sources", and "name", "socket", "url", "token" and "caFile" in each source, written in exactly that case)`},
		{"X_wrong_case_version", `{"Version": 1, "sources": []}`,
			`has a field Collie does not know (line 1, column 2) (it knows "version" and "sources", and "name", "socket", "url", "token" and "caFile" in each source, written in exactly that case)`},
		{"X_field_twice", `{"version": 1, "sources": [{"name": "a", "socket": "/s", "socket": "/t"}]}`, `has "socket" twice in one object (line 1, column 58)`},
		{"X_sources_twice", `{"version": 1, "sources": [], "sources": [{"name": "a", "socket": "/s"}]}`, `has "sources" twice in one object (line 1, column 31)`},
		{"X_invalid_utf8", "{\"version\": 1, \"sources\": [{\"name\": \"a\xff\", \"socket\": \"/s\"}]}", "has text that is not valid UTF-8 (line 1, column 39)"},
		{"K5_negative_version", `{"version": -1, "sources": []}`, "has version -1; this Collie reads version 1"},
		{"K5_bad_entry", `{"version": 1, "sources": [{"name": "a", "socket": "/s", ` + tok + `}]}`,
			"has a bad entry (source 1: durable agent a has a socket and a token, but a socket carries no token; remove the token)"},
		{"K5_duplicate_name", `{"version": 1, "sources": [{"name": "a", "socket": "/s"}, {"name": "a", "url": "https://a", ` + tok + `}]}`,
			"has a bad entry (source 2: the name a is used twice; keep one)"},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name+".json")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			checkErr(t, err, "load sources: "+path+" "+tt.want+"; fix or remove "+path)
			if err != nil && strings.Contains(err.Error(), token[:8]) {
				t.Errorf("the error quotes the file: %s", err)
			}
		})
	}

	t.Run("K5_newer_version", func(t *testing.T) {
		path := filepath.Join(dir, "newer.json")
		if err := os.WriteFile(path, []byte(`{"version": 2, "sources": [{"name": "a", "later": true}]}`), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		checkErr(t, err, "load sources: "+path+" has version 2, newer than this Collie reads (1); upgrade Collie, or fix or remove "+path)
	})

	t.Run("K5_too_large", func(t *testing.T) {
		path := filepath.Join(dir, "large.json")
		if err := os.WriteFile(path, make([]byte, maxFileSize+1), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		checkErr(t, err, "load sources: "+path+" is larger than 1 MiB; fix or remove "+path)
	})

	t.Run("K5_folder_in_place_of_file", func(t *testing.T) {
		path := filepath.Join(dir, "folder.json")
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		checkErr(t, err, "load sources: "+path+" is not a regular file; remove it")
	})
}

func TestSave(t *testing.T) {
	t.Run("K5_round_trip_and_layout", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "sources.json")
		want, err := os.ReadFile(filepath.Join("testdata", "sources.json"))
		if err != nil {
			t.Fatal(err)
		}
		f, err := Load(filepath.Join("testdata", "sources.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := Save(path, f); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("saved\n%s\nwant\n%s", got, want)
		}
		assertMode(t, path, 0o600)
		assertOnlyFiles(t, filepath.Dir(path), "sources.json")
	})

	t.Run("K5_empty_list", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "sources.json")
		if err := Save(path, File{}); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		if want := "{\n  \"version\": 1,\n  \"sources\": []\n}\n"; string(got) != want {
			t.Errorf("saved %q, want %q", got, want)
		}
	})

	t.Run("K5_creates_folder_0700", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "config", "collie")
		path := filepath.Join(dir, "sources.json")
		if err := Save(path, File{}); err != nil {
			t.Fatal(err)
		}
		assertMode(t, dir, 0o700)
		assertMode(t, path, 0o600)
	})

	t.Run("K5_replaces_open_file_with_0600", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "sources.json")
		if err := os.WriteFile(path, []byte(`{"version": 1, "sources": []}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := Save(path, File{}); err != nil {
			t.Fatal(err)
		}
		assertMode(t, path, 0o600)
	})

	t.Run("K5_invalid_file_not_written", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "sources.json")
		old := writeOld(t, path)
		err := Save(path, File{Sources: []Source{{Name: "a", Socket: "/s"}, {Name: "a", Socket: "/t"}}})
		checkErr(t, err, "save sources: source 2: the name a is used twice; keep one")
		assertContent(t, path, old)
		assertOnlyFiles(t, filepath.Dir(path), "sources.json")
	})

	t.Run("K5_failed_write_keeps_old_file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "sources.json")
		old := writeOld(t, path)
		full := File{Sources: []Source{{Name: "b", URL: "https://b", Token: token}}}
		// Write half, then fail, as a full disk would.
		failing := func(w io.Writer, data []byte) error {
			w.Write(data[:len(data)/2])
			return errors.New("no space left on device")
		}
		err := save(path, full, failing)
		if err == nil || !strings.HasPrefix(err.Error(), "save sources: write ") || !strings.HasSuffix(err.Error(), ": no space left on device") {
			t.Errorf("save = %v, want a write error", err)
		}
		assertContent(t, path, old)
		assertOnlyFiles(t, filepath.Dir(path), "sources.json")
	})

	t.Run("K5_folder_is_a_file", func(t *testing.T) {
		parent := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(parent, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := Save(filepath.Join(parent, "sources.json"), File{}); err == nil || !strings.HasPrefix(err.Error(), "save sources: ") {
			t.Errorf("Save under a file = %v, want a save error", err)
		}
	})
}

func TestUpdate(t *testing.T) {
	t.Run("K5_error_from_fn_leaves_file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "sources.json")
		old := writeOld(t, path)
		errStop := errors.New("stop")
		err := Update(path, func(f *File) error {
			f.Sources = nil // a change that must not land
			return errStop
		})
		if !errors.Is(err, errStop) {
			t.Errorf("Update = %v, want fn's error", err)
		}
		assertContent(t, path, old)
	})

	t.Run("K5_add_error_is_shown_as_is", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "sources.json")
		writeOld(t, path)
		err := Update(path, func(f *File) error { return f.Add(Source{Name: "old", Socket: "/x"}) })
		checkErr(t, err, "a durable agent named old is already attached; detach it first with: collie durable detach old")
	})

	t.Run("K5_broken_file_not_overwritten", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "sources.json")
		if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
		called := false
		err := Update(path, func(*File) error { called = true; return nil })
		checkErr(t, err, "load sources: "+path+" is empty or cut short; fix or remove "+path)
		if called {
			t.Error("fn ran on a broken file")
		}
		assertContent(t, path, "{")
	})

	t.Run("K5_concurrent_updates_all_land", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "collie")
		path := filepath.Join(dir, "sources.json")
		const n = 20
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				errs <- Update(path, func(f *File) error {
					return f.Add(Source{Name: fmt.Sprintf("agent-%02d", i), Socket: fmt.Sprintf("/run/user/1000/desk/%d.sock", i)})
				})
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		f, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Sources) != n {
			t.Fatalf("%d sources after %d concurrent attaches, want %d", len(f.Sources), n, n)
		}
		for i := range n {
			if _, ok := f.Get(fmt.Sprintf("agent-%02d", i)); !ok {
				t.Errorf("agent-%02d lost", i)
			}
		}
		assertMode(t, dir, 0o700)
		assertMode(t, path, 0o600)
		assertMode(t, path+".lock", 0o600)
		assertOnlyFiles(t, dir, "sources.json", "sources.json.lock")
	})
}

func TestTighten(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows files have no Unix modes")
	}
	tests := []struct {
		name      string
		mode      fs.FileMode
		tightened bool
	}{
		{"K5_0644_tightened", 0o644, true},
		{"K5_0640_tightened", 0o640, true},
		{"K5_0604_tightened", 0o604, true},
		{"K5_0666_tightened", 0o666, true},
		{"K5_0600_kept", 0o600, false},
		{"K5_0400_kept", 0o400, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sources.json")
			writeOld(t, path)
			if err := os.Chmod(path, tt.mode); err != nil {
				t.Fatal(err)
			}
			tightened, old, err := Tighten(path)
			if err != nil {
				t.Fatal(err)
			}
			if tightened != tt.tightened || old != tt.mode {
				t.Errorf("Tighten = %v, %04o; want %v, %04o", tightened, old, tt.tightened, tt.mode)
			}
			want := tt.mode
			if tt.tightened {
				want = 0o600
			}
			assertMode(t, path, want)
		})
	}

	t.Run("K5_missing_file", func(t *testing.T) {
		tightened, old, err := Tighten(filepath.Join(t.TempDir(), "sources.json"))
		if tightened || old != 0 || err != nil {
			t.Errorf("Tighten(missing) = %v, %v, %v; want false, 0, nil", tightened, old, err)
		}
	})
}

// writeOld puts a valid file with one source at path and returns its content.
func writeOld(t *testing.T, path string) string {
	t.Helper()
	const old = `{"version": 1, "sources": [{"name": "old", "socket": "/run/user/1000/desk/old.sock"}]}`
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	return old
}

func assertContent(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s changed:\n%s\nwant\n%s", path, got, want)
	}
}

func assertMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	if runtime.GOOS == "windows" {
		return
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != want {
		t.Errorf("%s has mode %04o, want %04o", path, got, want)
	}
}

// assertOnlyFiles checks that no temporary file was left in dir.
func assertOnlyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, " ") != strings.Join(names, " ") {
		t.Errorf("%s holds %v, want %v", dir, got, names)
	}
}

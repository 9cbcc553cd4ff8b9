package sources

import (
	"os"
	"strings"
	"testing"
)

// FuzzLoad: whatever is in sources.json, Load never panics, never quotes
// the file in its error (it may hold tokens), and a file it accepts saves
// and loads again to the same list.
func FuzzLoad(f *testing.F) {
	seed, err := os.ReadFile("testdata/sources.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"version":1,"sources":[{"name":"a","socket":"/s"}]}`))
	f.Add([]byte(`{"version":1,"sources":[{"name":"a","url":"https://x.invalid","token":"SECRET-SECRET-SECRET-SECRET-SECRET-1"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := dir + "/sources.json"
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		file, err := Load(path)
		if err != nil {
			if strings.Contains(err.Error(), "SECRET-SECRET") {
				t.Fatalf("the error quotes the file: %v", err)
			}
			return
		}
		if err := Save(path, file); err != nil {
			t.Fatalf("an accepted file does not save: %v", err)
		}
		again, err := Load(path)
		if err != nil || len(again.Sources) != len(file.Sources) {
			t.Fatalf("an accepted file does not load again: %v", err)
		}
		for i := range file.Sources {
			if again.Sources[i] != file.Sources[i] {
				t.Fatalf("source %d changed: %v != %v", i, again.Sources[i], file.Sources[i])
			}
		}
	})
}

package durable

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestGoldenWrites pins what the agent answers, status and body byte for
// byte, to every write of the registry: taken, taken again (a replay), its
// request id reused for another body, a body that is not JSON, one of
// another write, an empty one; and to the local routes' bodies:
// testdata/writes.golden (go test -update rewrites it after a deliberate
// change). How a write is described in Go does not change the wire.
func TestGoldenWrites(t *testing.T) {
	s, err := NewServer(wire.Hello{Agent: "a"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	s.SetApp(&calls{})
	srv := httptest.NewServer(s.handler(Transport{Unchecked: true}))
	defer srv.Close()
	var out bytes.Buffer
	post := func(path, body string) {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		req.Header.Set(wire.VersionHeader, "1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if len(body) > 200 {
			body = fmt.Sprintf("(%d bytes)", len(body))
		}
		fmt.Fprintf(&out, "POST %s %s\n  %d %s\n", path, body, resp.StatusCode, bytes.TrimSuffix(b, []byte("\n")))
	}
	for _, w := range wire.Writes() {
		body := registryBodies[w.Name]
		post(w.Path, body)
		post(w.Path, body)
		post(w.Path, strings.NewReplacer(`"c"`, `"c2"`, `"deploy"`, `"busy"`, `"tests"`, `"other"`, `"Logs"`, `"Logs 2"`).Replace(body))
		post(w.Path, strings.Replace(body, "}", `,"`+w.Name+`":1}`, 1))
		post(w.Path, "not json")
		post(w.Path, "")
		for _, other := range wire.Writes() {
			if other.Name != w.Name {
				post(w.Path, strings.Replace(registryBodies[other.Name], `"r-`+other.Name+`"`, `"r-`+w.Name+`-`+other.Name+`"`, 1))
			}
		}
	}
	post(wire.RevokePath, `{"grant":"g-1","all":true}`)
	post(wire.RevokePath, `not json`)
	post(wire.AskPath, `{"requestId":"r","kind":"nope","title":"Q"}`)
	path := filepath.Join("testdata", "writes.golden")
	if *update {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; run go test -update to write it", err)
	}
	if got := out.Bytes(); !bytes.Equal(got, want) {
		g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range min(len(g), len(w)) {
			if g[i] != w[i] {
				t.Fatalf("the replies differ from %s at line %d (go test -update rewrites it after a deliberate change):\ngot:  %s\nwant: %s", path, i+1, g[i], w[i])
			}
		}
		t.Fatalf("the replies differ from %s in length: %d lines, want %d", path, len(g), len(w))
	}
}

package device

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestGateIdentifiesOnce_A1: the gate looks up who a refused credential
// belongs to (for the audit line) once per refused request, and not at
// all for a write that passes or one refused after the device is known.
// (It used to look it up before every gated request, and again when the
// credential was refused.)
func TestGateIdentifiesOnce_A1(t *testing.T) {
	send := `{"requestId":"r1","conversation":"c","text":"hi"}`
	tests := []struct {
		name   string
		status int
		calls  int64
		do     func(t *testing.T, f *fixture, revoked string) (int, string)
	}{
		{"passes", 200, 0, func(t *testing.T, f *fixture, _ string) (int, string) {
			return f.serve(t, "192.0.2.1:1", "POST", "/api/v1/agents/demo/send", send, map[string]string{WriteHeader: "1", "Authorization": "Bearer " + f.cred})
		}},
		{"forged", 401, 1, func(t *testing.T, f *fixture, _ string) (int, string) {
			return f.serve(t, "192.0.2.1:1", "POST", "/api/v1/agents/demo/send", send, map[string]string{WriteHeader: "1", "Authorization": "Bearer forged"})
		}},
		{"revoked", 401, 1, func(t *testing.T, f *fixture, revoked string) (int, string) {
			return f.serve(t, "192.0.2.1:1", "POST", "/api/v1/agents/demo/send", send, map[string]string{WriteHeader: "1", "Authorization": "Bearer " + revoked})
		}},
		{"none", 401, 1, func(t *testing.T, f *fixture, _ string) (int, string) {
			return f.serve(t, "192.0.2.1:1", "POST", "/api/v1/agents/demo/send", send, writeHdr)
		}},
		{"cross_site", 403, 1, func(t *testing.T, f *fixture, _ string) (int, string) {
			return f.serve(t, "192.0.2.1:1", "POST", "/api/v1/agents/demo/send", send, map[string]string{"Origin": "http://evil.invalid", WriteHeader: "1", "Authorization": "Bearer " + f.cred})
		}},
		{"pairing_takes_no_credential", 403, 0, func(t *testing.T, f *fixture, _ string) (int, string) {
			return f.serve(t, "192.0.2.1:1", "POST", "/api/v1/pair", `{"secret":"x"}`, map[string]string{"Origin": "http://evil.invalid", WriteHeader: "1"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			revoked, id := f.pair(t, "laptop")
			if err := f.api.Revoke(id); err != nil {
				t.Fatal(err)
			}
			var calls atomic.Int64
			identify := f.api.identify
			f.api.identify = func(cred string) string { calls.Add(1); return identify(cred) }
			if status, b := tt.do(t, f, revoked); status != tt.status {
				t.Fatalf("status %d, want %d: %s", status, tt.status, b)
			}
			if n := calls.Load(); n != tt.calls {
				t.Errorf("Identify was called %d times, want %d", n, tt.calls)
			}
		})
	}
}

// TestHostCheckedInOnePlace_D6: the Host check is the router's, before
// any route; nothing else in the device API checks it again (the gate's
// own check could never fire), so there is one place to read and change.
// TestHostRefusedBeforeAnyRoute pins that the router's check covers every
// route, writes included.
func TestHostCheckedInOnePlace_D6(t *testing.T) {
	var at []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && strings.EqualFold(sel.Sel.Name, "hostOK") {
					at = append(at, fn.Name.Name)
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(at) != 1 || at[0] != "ServeHTTP" {
		t.Fatalf("the Host is checked in %v; want once, in the router's ServeHTTP", at)
	}
}

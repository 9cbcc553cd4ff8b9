package deps

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// D6 in the code itself: on the bridge's side, the one way to an agent's
// write routes is the device API's handler. The registry of writes (whose
// rows name the agent's routes) is read only by the device API's route
// table, by the audit log (which takes a row's request type, never its
// route) and by the upstream client (which checks a request by the row of
// the route it was given to send it to); Backend.Forward is called only by the device API; and a write
// goes out through an upstream client only in Bridge.Forward.
var d6Allowed = map[string][]string{
	"wire.Writes":     {"internal/bridge/device/api.go"},
	"wire.WriteNamed": {"internal/bridge/device/api.go", "internal/bridge/audit/event.go"},
	"wire.WriteAt":    {"internal/bridge/upstream/write.go"},
	"wire.AnswerPath": nil,
	".Forward()":      {"internal/bridge/device/api.go"}, // the device handler's one call
	".Write(3 args)":  {"internal/bridge/devices.go"},    // Bridge.Forward's one call
}

// d6MustFind are uses the scan must see in today's code: without them it
// is broken, not passing.
var d6MustFind = []string{"wire.Writes", ".Forward()", ".Write(3 args)"}

// d6Uses returns, for each watched use in the Go source files (path to
// text), the files it is in.
func d6Uses(files map[string][]byte) (map[string][]string, error) {
	fset := token.NewFileSet()
	found := map[string][]string{}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range files {
			if !yield(n) {
				return
			}
		}
	}) {
		f, err := parser.ParseFile(fset, name, files[name], 0)
		if err != nil {
			return nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "wire" {
					if _, watched := d6Allowed["wire."+n.Sel.Name]; watched {
						found["wire."+n.Sel.Name] = append(found["wire."+n.Sel.Name], name)
					}
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
					switch {
					case sel.Sel.Name == "Forward":
						found[".Forward()"] = append(found[".Forward()"], name)
					case sel.Sel.Name == "Write" && len(n.Args) == 3:
						// client.Write(ctx, path, req): a write to an agent.
						found[".Write(3 args)"] = append(found[".Write(3 args)"], name)
					}
				}
			}
			return true
		})
	}
	return found, nil
}

// d6Check returns every use outside d6Allowed.
func d6Check(found map[string][]string) []string {
	var out []string
	for _, use := range slices.Sorted(func(yield func(string) bool) {
		for u := range found {
			if !yield(u) {
				return
			}
		}
	}) {
		for _, f := range found[use] {
			if !slices.Contains(d6Allowed[use], f) {
				out = append(out, fmt.Sprintf("D6: %s is used in %s; only %v may reach an agent's write routes", use, f, d6Allowed[use]))
			}
		}
	}
	return out
}

// TestD6AnswerRouteOnlyFromDevices scans the non-test Go files of the
// bridge's side (cmd/collie and the packages it alone links), as go list
// names them.
func TestD6AnswerRouteOnlyFromDevices(t *testing.T) {
	_, pkgs := listModule(t)
	files := map[string][]byte{}
	for path, p := range pkgs {
		if !matchAny(cat([]string{"cmd/collie"}, bridgeSide), path) {
			continue
		}
		for _, f := range p.GoFiles {
			data, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			files[filepath.Join(short(path), f)] = data
		}
	}
	found, err := d6Uses(files)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range d6Check(found) {
		t.Error(v)
	}
	for _, use := range d6MustFind {
		if len(found[use]) == 0 {
			t.Errorf("found no %s at all: the scan is broken", use)
		}
	}
}

// TestD6ScanCatchesBreaks: a bridge file that forwards a write, sends one
// through a client, or reads the registry's routes, is named.
func TestD6ScanCatchesBreaks(t *testing.T) {
	tests := map[string]string{
		"wire.Writes":     `for _, w := range wire.Writes() { _ = w.Path }`,
		"wire.WriteNamed": `w, _ := wire.WriteNamed("answer"); _ = w`,
		"wire.AnswerPath": `_ = wire.AnswerPath`,
		".Forward()":      `b.Forward(ctx, "agent", "/v1/answer", req)`,
		".Write(3 args)":  `a.client.Write(ctx, "/v1/answer", req)`,
	}
	for use, body := range tests {
		t.Run(use, func(t *testing.T) {
			src := "package bridge\nfunc hook() {\n" + body + "\n}\n"
			found, err := d6Uses(map[string][]byte{"internal/bridge/hook.go": []byte(src)})
			if err != nil {
				t.Fatal(err)
			}
			v := d6Check(found)
			if len(v) != 1 || !slices.Contains(found[use], "internal/bridge/hook.go") {
				t.Fatalf("%s in a bridge hook: %v", use, v)
			}
		})
	}
}

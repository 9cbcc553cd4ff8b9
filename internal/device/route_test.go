package device

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnswerRouteOnlyFromDevices pins D6 in the code itself: on the
// bridge's side, the only way to an agent's answer route is the device
// API's handler. Nothing else names the route, calls Backend.Forward, or
// sends a write through an upstream client.
func TestAnswerRouteOnlyFromDevices(t *testing.T) {
	allowed := map[string][]string{
		// The protocol's registry of writes, whose rows name the agent's
		// routes: the device API's route table, and the audit log, which
		// reads a row's request type to record a refused write.
		"Writes":     {"internal/device/api.go"},
		"WriteNamed": {"internal/device/api.go", "internal/audit/event.go"},
		"WriteAt":    nil,
		"NewRequest": nil,
		"WritePaths": nil,
		"AnswerPath": nil,
		"Forward":    {"internal/device/api.go"},     // the device handler's one call
		"Write":      {"internal/bridge/devices.go"}, // Bridge.Forward's one call
	}
	mustFind := []string{"Writes", "Forward", "Write"}
	// The bridge's side of the code: the agent side (durable, collie-agent)
	// serves the answer route and is not the bridge.
	bridgeSide := []string{"cmd/collie", "internal/bridge", "internal/control", "internal/device", "internal/upstream", "internal/doctor", "internal/audit"}
	root := "../.."
	fset := token.NewFileSet()
	found := map[string][]string{}
	for _, dir := range bridgeSide {
		filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(root, path)
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SelectorExpr:
					if x, ok := n.X.(*ast.Ident); ok && x.Name == "wire" {
						if _, watched := allowed[n.Sel.Name]; watched {
							found[n.Sel.Name] = append(found[n.Sel.Name], rel)
						}
					}
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
						switch {
						case sel.Sel.Name == "Forward":
							found["Forward"] = append(found["Forward"], rel)
						case sel.Sel.Name == "Write" && len(n.Args) == 3:
							// client.Write(ctx, path, req): a write to an agent.
							found["Write"] = append(found["Write"], rel)
						}
					}
				}
				return true
			})
			return nil
		})
	}
	for name, files := range found {
		for _, f := range files {
			ok := false
			for _, a := range allowed[name] {
				ok = ok || f == a
			}
			if !ok {
				t.Errorf("D6: %s is used in %s; only %v may reach an agent's answer route", name, f, allowed[name])
			}
		}
	}
	for _, name := range mustFind {
		if len(found[name]) == 0 {
			t.Errorf("found no use of %s at all: the scan is broken", name)
		}
	}
}

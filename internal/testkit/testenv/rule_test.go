package testenv

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// allowedSkips are the skips that do not depend on the machine, so CI
// skips them too: file (from the module root) and a piece of the call's
// text. Every other skip goes through Unavailable.
var allowedSkips = []struct{ file, call string }{
	// The entry point of a helper process: the test binary runs itself
	// with ATOMICFILE_HELPER set; without it there is nothing to do.
	{"internal/linux/atomicfile/stale_test.go", `"a helper process of TestRemoveStale"`},
	// The child process of BenchmarkLoadThousand, which runs it.
	{"internal/bridge/load_test.go", `"the bridge side of BenchmarkLoadThousand; run by it"`},
	// -short asks for the quick tests; CI does not pass it.
	{"internal/bridge/device/browser_helpers_test.go", `"-short: the real-browser test`},
	{"internal/agent/mcpserver/latency_test.go", `"a timing measurement; run without -short"`},
	{"internal/suite/e2e/hooklatency_test.go", `"a timing measurement; run without -short"`},
	{"internal/suite/agentclients/claude_collie_test.go", `"a measurement: runs Claude Code several times"`},
	{"internal/agent/ask/hookcpu_test.go", `"builds collie"`},
	{"cmd/collie-hook/main_test.go", `"-short: builds collie"`},
	// Another operating system, not a machine that lacks something.
	{"internal/bridge/sources/store_test.go", `"Windows files have no Unix modes"`},
}

// TestSkipsGoThroughTestenv: no test skips on its own
// because of its environment, and none reads CI itself. A skip that may
// not happen in CI goes through Unavailable; the few that are not about
// the machine are listed in allowedSkips, and each entry must still match
// a skip (so the list does not outlive its reasons).
func TestSkipsGoThroughTestenv(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	used := make([]bool, len(allowedSkips))
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == root {
				return nil
			}
			if name := d.Name(); strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "bin" || name == "vendor" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module (a module cache under the tree, say)
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, "internal/testkit/testenv/") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, rel, src, 0)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			text := string(src[fset.Position(call.Pos()).Offset:fset.Position(call.End()).Offset])
			pos := fset.Position(call.Pos())
			switch sel.Sel.Name {
			case "Skip", "Skipf", "SkipNow":
				for i, a := range allowedSkips {
					if a.file == rel && strings.Contains(text, a.call) {
						used[i] = true
						return true
					}
				}
				t.Errorf("%s:%d: %s: a skip that CI would take too; use testenv.Unavailable (or add it to allowedSkips if it does not depend on the machine)", rel, pos.Line, text)
			case "Getenv", "LookupEnv":
				if len(call.Args) == 1 {
					if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Value == `"CI"` {
						t.Errorf("%s:%d: %s: use testenv.InCI or testenv.Unavailable, so CI=true means one thing", rel, pos.Line, text)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read only %d Go files under %s; is the walk wrong?", files, root)
	}
	for i, ok := range used {
		if !ok {
			t.Errorf("allowedSkips has %s %s, which matches no skip: remove it", allowedSkips[i].file, allowedSkips[i].call)
		}
	}
}

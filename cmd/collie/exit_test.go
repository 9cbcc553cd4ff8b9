package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoExitBelowMain_L4: os.Exit is called in func main of the two
// binaries and nowhere else outside tests, so every way out goes through
// exitCode and report, and deferred clean-ups run.
func TestNoExitBelowMain_L4(t *testing.T) {
	var found []string
	for _, root := range []string{"../../cmd", "../../internal"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				isMain := fn.Name.Name == "main" && fn.Recv == nil && f.Name.Name == "main"
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					sel, ok := n.(*ast.SelectorExpr)
					if ok && sel.Sel.Name == "Exit" {
						if id, ok := sel.X.(*ast.Ident); ok && id.Name == "os" && !isMain {
							found = append(found, path+": "+fn.Name.Name)
						}
					}
					return true
				})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range found {
		if !strings.Contains(f, "e2e/") { // test helper programs built by the e2e tests
			t.Errorf("os.Exit below main: %s", f)
		}
	}
}

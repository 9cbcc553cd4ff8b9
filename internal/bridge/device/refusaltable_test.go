package device

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/bridge/device/apierr"
)

// TestRefusalsOnlyFromTheTable: no code of the device API, its policy or
// its store writes a refusal but through apierr's table. Outside apierr,
// no source file spells a code of the table as a string, names one of the
// protocol's codes (wire.Code…), builds an error body (.Error.Code,
// .Error.Message) or writes one another way (http.Error, but for the web
// app's plain 404 of a file it does not have; the agent's writeError); so every refusal is a row, worded once, and
// docs/device-api.md's list (checked against the table in apierr) is the
// whole list.
func TestRefusalsOnlyFromTheTable(t *testing.T) {
	codes := map[string]bool{}
	for _, c := range apierr.Codes() {
		codes[string(c)] = true
	}
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (path == "apierr" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING && codes[s] {
					t.Errorf("%s: the code %q is spelled outside apierr's table", fset.Position(n.Pos()), s)
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "wire" && (strings.HasPrefix(n.Sel.Name, "Code") || n.Sel.Name == "WriteError" || n.Sel.Name == "ErrorBody") {
					t.Errorf("%s: wire.%s outside apierr's table", fset.Position(n.Pos()), n.Sel.Name)
				}
				// The web app's file server answers a file it does not
				// have with a plain 404, as a browser expects of a page.
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "http" && n.Sel.Name == "Error" && path != filepath.Join("web", "web.go") {
					t.Errorf("%s: http.Error writes a refusal outside apierr's table", fset.Position(n.Pos()))
				}
				if inner, ok := n.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "Error" && (n.Sel.Name == "Code" || n.Sel.Name == "Message" || n.Sel.Name == "Hint") {
					t.Errorf("%s: an error body built outside apierr's table", fset.Position(n.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 10 {
		t.Fatalf("walked %d files: the walk is broken", files)
	}
}

// TestWebAppKnowsOnlyTheTablesCodes: every code the web app tells apart
// (code === '…') is one of the table's, or its own "unreachable" for a
// bridge it cannot reach.
func TestWebAppKnowsOnlyTheTablesCodes(t *testing.T) {
	codes := apierr.Codes()
	js, _ := filepath.Glob(filepath.Join("web", "*.js"))
	seen := 0
	re := regexp.MustCompile(`(typeof )?\w+\.code === '([a-z-]+)'`)
	for _, name := range js {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(data), -1) {
			if m[1] != "" {
				continue // a type check
			}
			seen++
			if m[2] != "unreachable" && !slices.Contains(codes, apierr.Code(m[2])) {
				t.Errorf("%s tells apart the code %q, which the bridge never sends", name, m[2])
			}
		}
	}
	if seen == 0 {
		t.Fatal("the web app tells apart no code: the pattern is broken")
	}
}

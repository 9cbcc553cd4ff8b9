package deps

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// writeTypes are the request types of the registry's writes, by name
// ("SendRequest").
func writeTypes() map[string]bool {
	out := map[string]bool{}
	for _, w := range wire.Writes() {
		name := fmt.Sprintf("%T", w.New()) // "*wire.SendRequest"
		out[name[strings.LastIndex(name, ".")+1:]] = true
	}
	return out
}

// perWriteCode returns, for the Go source src of file name, every place
// that spells out behaviour per write request type: a method declared on
// one (they share their Header's), or a type switch with a case for one
// (what a write does is in a table keyed by its name).
func perWriteCode(name string, src []byte, types map[string]bool) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		return nil, err
	}
	isWrite := func(e ast.Expr) bool {
		if s, ok := e.(*ast.StarExpr); ok {
			e = s.X
		}
		switch e := e.(type) {
		case *ast.Ident:
			return f.Name.Name == "wire" && types[e.Name]
		case *ast.SelectorExpr:
			x, ok := e.X.(*ast.Ident)
			return ok && x.Name == "wire" && types[e.Sel.Name]
		}
		return false
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Recv != nil && len(n.Recv.List) == 1 && isWrite(n.Recv.List[0].Type) {
				out = append(out, fmt.Sprintf("%s: the method %s of a write's request", fset.Position(n.Pos()), n.Name.Name))
			}
		case *ast.TypeSwitchStmt:
			for _, c := range n.Body.List {
				for _, e := range c.(*ast.CaseClause).List {
					if isWrite(e) {
						out = append(out, fmt.Sprintf("%s: a type switch with a case for a write's request", fset.Position(e.Pos())))
					}
				}
			}
		}
		return true
	})
	return out, nil
}

// TestWritesAreTheRegistry: no code of the module spells out a write per
// request type: no method of a write's request (its request id is its
// Header's, its name its registry row's) and no type switch over them
// (durable's handlers, the audit log's events and wire's validators are
// tables keyed by the write's name, each tested against the registry). A
// new write is then its request type, its row, and a row in each table,
// and the tests of a table it lacks one in fail.
func TestWritesAreTheRegistry(t *testing.T) {
	types := writeTypes()
	if len(types) != len(wire.Writes()) {
		t.Fatalf("the registry's request types %v are not one per write", types)
	}
	_, pkgs := listModule(t)
	seen := 0
	for _, p := range pkgs {
		for _, name := range p.GoFiles {
			path := filepath.Join(p.Dir, name)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			found, err := perWriteCode(filepath.Join(short(p.ImportPath), name), src, types)
			if err != nil {
				t.Fatal(err)
			}
			seen++
			for _, f := range found {
				t.Error(f)
			}
		}
	}
	if seen < 100 {
		t.Fatalf("only %d files scanned: the scan is broken", seen)
	}
}

// TestWritesScanCatchesBreaks: a method on a write's request, or a type
// switch over them, in or outside package wire, is named.
func TestWritesScanCatchesBreaks(t *testing.T) {
	types := writeTypes()
	tests := map[string]string{
		"method":             "package wire\nfunc (s *SendRequest) Name() string { return \"send\" }\n",
		"value_method":       "package wire\nfunc (s SendRequest) ID() string { return s.RequestID }\n",
		"switch_in_wire":     "package wire\nfunc f(r any) { switch r.(type) { case *AbortRequest: } }\n",
		"switch_outside":     "package audit\nfunc f(r any) { switch q := r.(type) { case *wire.SendRequest: _ = q } }\n",
		"switch_by_value":    "package durable\nfunc f(r any) { switch r.(type) { case wire.StarterRequest: } }\n",
		"not_wire_elsewhere": "package device\nfunc (a *AnswerRequest) Validate() error { return nil }\n",
	}
	for name, src := range tests {
		t.Run(name, func(t *testing.T) {
			found, err := perWriteCode("x.go", []byte(src), types)
			if err != nil {
				t.Fatal(err)
			}
			if want := name != "not_wire_elsewhere"; want != (len(found) == 1) {
				t.Fatalf("%s: %v", src, found)
			}
		})
	}
	if found, _ := perWriteCode("x.go", []byte("package wire\nfunc (h *Header) Head() *Header { return h }\n"), types); !slices.Equal(found, nil) {
		t.Fatalf("the Header's method was named: %v", found)
	}
}

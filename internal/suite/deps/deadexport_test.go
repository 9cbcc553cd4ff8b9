package deps

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// keptExports are exported functions no other package calls, kept on
// purpose; each says why. Anything else exported and unused from outside
// its package is dead code or should be unexported.
var keptExports = map[string]string{
	"internal/bridge/device/apierr.Codes": "the device API's error codes as data: the device package's tests check docs/device-api.md and every refusal against them",
}

// TestNoDeadExports: every exported function of a product package under
// internal/ is called (or named) by another package of the module, tests
// excluded. A function only tests call is code the binaries carry for
// nothing; one only its own package calls should not be exported. Test
// helpers (internal/testkit and the like) are for tests, so they are
// neither checked nor counted as callers.
func TestNoDeadExports(t *testing.T) {
	_, pkgs := listModule(t)
	fset := token.NewFileSet()
	declared := map[string]bool{} // "import/path.Func"
	used := map[string]bool{}
	inside := map[string]bool{} // named in its own package
	for path, p := range pkgs {
		rel := strings.TrimPrefix(path, module)
		if matchAny(testHelper, path) {
			continue
		}
		files := slices.Concat(p.GoFiles, p.CgoFiles, p.IgnoredGoFiles)
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if strings.HasPrefix(rel, "internal/") && f.Name.Name != "main" {
				for _, d := range f.Decls {
					if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.IsExported() {
						declared[path+"."+fn.Name.Name] = true
					}
				}
			}
			declNames := map[*ast.Ident]bool{} // a declaration's own name is no use of it
			for _, d := range f.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok {
					declNames[fn.Name] = true
				}
			}
			imports := map[string]string{} // local name -> import path
			for _, im := range f.Imports {
				ip, _ := strconv.Unquote(im.Path.Value)
				local := ip[strings.LastIndex(ip, "/")+1:]
				if im.Name != nil {
					local = im.Name.Name
				}
				imports[local] = ip
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok && id.IsExported() && !declNames[id] {
					inside[path+"."+id.Name] = true
				}
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok {
						if ip, ok := imports[x.Name]; ok && ip != path {
							used[ip+"."+sel.Sel.Name] = true
						}
					}
				}
				return true
			})
		}
	}
	if len(declared) < 50 {
		t.Fatalf("found %d exported functions; the scan is broken", len(declared))
	}
	var dead, local []string
	for fn := range declared {
		name := strings.TrimPrefix(fn, module)
		if !used[fn] && keptExports[name] == "" {
			if inside[fn] {
				local = append(local, name)
			} else {
				dead = append(dead, name)
			}
		}
	}
	// Exported functions only their own package calls are reported, not
	// failed: unexporting them is a rename across packages others are
	// editing. The log lists them for whoever does it.
	slices.Sort(local)
	for _, name := range local {
		t.Logf("%s is exported but only its own package calls it", name)
	}
	for name := range keptExports {
		if !declared[module+name] {
			t.Errorf("keptExports names %s, which is no exported function of the module: drop it from the list", name)
		} else if used[module+name] {
			t.Errorf("keptExports names %s, which another package calls now: drop it from the list", name)
		}
	}
	slices.Sort(dead)
	for _, name := range dead {
		t.Errorf("%s is exported but no other package calls it (tests excluded): delete it, unexport it, or list it in keptExports with the reason", name)
	}
}

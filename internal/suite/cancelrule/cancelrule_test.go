package cancelrule

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// escapes are the cancel functions that leave the statement making them:
// file (from the module root), the function that makes it, and where the
// cancel is called. Each entry must still match (the list does not
// outlive its code).
var escapes = []struct{ file, fn, released string }{
	{"cmd/collie-agent/serve.go", "context", "returned to run, which defers it"},
	{"cmd/collie/daemon.go", "catchSignals", "in the stop function it returns, which cmdDaemon and cmdDemo defer"},
	{"internal/agent/durable/durabletest/durabletest.go", "Serve", "the test's Cleanup calls it"},
	{"internal/bridge/bridge.go", "add", "agent.cancel: detach calls it, and add itself when the agent is kept unread"},
	{"internal/bridge/sched.go", "startScheduler", "Bridge.schedCancel: stopAll calls it"},
	{"internal/bridge/sched.go", "startRead", "passed to read, which defers it; kept in agent.stopRead to end the read early"},
	{"internal/bridge/device/feed.go", "enter", "conn.cancel: leave calls it, and every caller of enter defers leave"},
	{"internal/bridge/upstream/wait.go", "do", "the reply body's release calls it on Close; the callers defer the body's Close"},
	{"internal/login/loginservice/watch.go", "watch", "watch.cancel: a revocation calls it with its cause; the stop function it returns, which every caller defers, calls it too"},
	{"internal/agent/runagent/runagent.go", "Start", "Agent.cancel: Stop calls it, and collie run defers Stop"},
	{"internal/bridge/push/dispatch/dispatch.go", "startLocked", "worker.stop: a reload that removes the worker calls it; the worker's goroutine defers it"},
}

// makers are the functions that return a context and its cancel.
var makers = map[string]map[string]bool{
	"context": {"WithCancel": true, "WithCancelCause": true, "WithTimeout": true, "WithTimeoutCause": true, "WithDeadline": true, "WithDeadlineCause": true},
	"signal":  {"NotifyContext": true},
}

// TestEveryCancelIsCalledOrListed walks the module's Go files. A cancel
// that is assigned to a field, a map entry or the blank identifier, or is
// used other than by calling it (stored, passed, returned, captured by a
// closure that is not called where it is), must be listed in escapes.
func TestEveryCancelIsCalledOrListed(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	used := make([]bool, len(escapes))
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
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil // tests end with their process; go vet checks their locals
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		for _, e := range findEscapes(fset, f) {
			listed := false
			for i, x := range escapes {
				if x.file == rel && x.fn == e.fn {
					used[i], listed = true, true
				}
			}
			if !listed {
				t.Errorf("%s:%d (in %s): %s; call it where it is made (defer cancel()), or list it in escapes with the place that calls it", rel, e.line, e.fn, e.why)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("walked %d Go files under %s: not the module", files, root)
	}
	for i, x := range escapes {
		if !used[i] {
			t.Errorf("escapes lists %s %s, which no longer lets its cancel escape: remove the entry", x.file, x.fn)
		}
	}
}

type escape struct {
	fn   string
	line int
	why  string
}

// findEscapes returns the cancels in f that are not only called.
func findEscapes(fset *token.FileSet, f *ast.File) []escape {
	var out []escape
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		// parents of every node in the function, for the uses' context.
		parent := map[ast.Node]ast.Node{}
		var stack []ast.Node
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if n == nil {
				stack = stack[:len(stack)-1]
				return false
			}
			if len(stack) > 0 {
				parent[n] = stack[len(stack)-1]
			}
			stack = append(stack, n)
			return true
		})
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok || len(as.Rhs) != 1 || len(as.Lhs) != 2 || !isMaker(as.Rhs[0]) {
				return true
			}
			line := fset.Position(as.Pos()).Line
			id, ok := as.Lhs[1].(*ast.Ident)
			switch {
			case !ok:
				out = append(out, escape{fd.Name.Name, line, "the cancel is stored in " + exprText(fset, as.Lhs[1])})
				return true
			case id.Name == "_":
				out = append(out, escape{fd.Name.Name, line, "the cancel is dropped"})
				return true
			}
			obj := id.Obj
			if obj == nil {
				return true
			}
			ast.Inspect(fd.Body, func(m ast.Node) bool {
				use, ok := m.(*ast.Ident)
				if !ok || use == id || use.Obj != obj {
					return true
				}
				if call, ok := parent[use].(*ast.CallExpr); ok && call.Fun == use {
					if inEscapingClosure(use, as, parent) {
						out = append(out, escape{fd.Name.Name, line, "the cancel is called from a function literal that is kept"})
					}
					return true
				}
				if as2, ok := parent[use].(*ast.AssignStmt); ok && as2 == as {
					return true
				}
				if vs, ok := parent[use].(*ast.ValueSpec); ok && slices.Contains(vs.Names, use) {
					return true // its declaration: var cancel context.CancelFunc
				}
				out = append(out, escape{fd.Name.Name, line, fmt.Sprintf("the cancel is used at line %d other than by calling it", fset.Position(use.Pos()).Line)})
				return true
			})
			return true
		})
	}
	return out
}

// inEscapingClosure says whether use sits in a function literal, inside
// the one that holds made, that is neither called at once nor deferred
// nor run as a goroutine, nor handed to time.AfterFunc (whose timer the
// function itself holds).
func inEscapingClosure(use, made ast.Node, parent map[ast.Node]ast.Node) bool {
	around := map[ast.Node]bool{}
	for n := parent[made]; n != nil; n = parent[n] {
		around[n] = true
	}
	for n := parent[use]; n != nil && !around[n]; n = parent[n] {
		lit, ok := n.(*ast.FuncLit)
		if !ok {
			continue
		}
		switch p := parent[lit].(type) {
		case *ast.CallExpr:
			if p.Fun == lit {
				continue // called at once (or deferred, or go)
			}
			if sel, ok := p.Fun.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "time" && sel.Sel.Name == "AfterFunc" {
					continue
				}
			}
			return true
		default:
			return true
		}
	}
	return false
}

func isMaker(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && makers[x.Name][sel.Sel.Name]
}

func exprText(fset *token.FileSet, e ast.Expr) string {
	p := fset.Position(e.Pos())
	q := fset.Position(e.End())
	src, err := os.ReadFile(p.Filename)
	if err != nil || q.Offset > len(src) {
		return "a field"
	}
	return string(src[p.Offset:q.Offset])
}

// TestFindEscapes holds the check to the shapes it must tell apart.
func TestFindEscapes(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		escapes    bool
	}{
		{"deferred", `ctx, cancel := context.WithCancel(p); defer cancel(); use(ctx)`, false},
		{"called", `ctx, cancel := context.WithTimeout(p, d); use(ctx); cancel()`, false},
		{"deferred closure", `ctx, stop := context.WithCancel(p); defer func() { stop(); wait() }(); use(ctx)`, false},
		{"timer", `ctx, cancel := context.WithCancelCause(p); time.AfterFunc(d, func() { cancel(nil) }); use(ctx)`, false},
		{"reassigned and called", `var cancel func(); _, cancel = context.WithCancel(p); cancel()`, false},
		{"stored in a field", `ctx, a.cancel = context.WithCancel(p); use(ctx)`, true},
		{"dropped", `ctx, _ := context.WithCancel(p); use(ctx)`, true},
		{"kept in a field", `ctx, stop := context.WithCancelCause(p); a.stop = stop; use(ctx)`, true},
		{"passed on", `ctx, stop := context.WithCancel(p); go read(ctx, stop)`, true},
		{"returned", `ctx, cancel := context.WithCancel(p); return ctx, cancel`, true},
		{"in a kept closure", `ctx, cancel := signal.NotifyContext(p); return ctx, func() { cancel() }`, true},
		{"copied", `ctx, cancel := context.WithCancel(p); var keep = cancel; use(ctx, keep)`, true},
		{"in a map", `ctx, stops[k] = context.WithDeadline(p, t); use(ctx)`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "package p\nfunc f() {\n" + tc.body + "\n}\n"
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "p.go", src, 0)
			if err != nil {
				t.Fatal(err)
			}
			got := findEscapes(fset, f)
			if (len(got) > 0) != tc.escapes {
				t.Fatalf("escapes = %+v, want escaping %v", got, tc.escapes)
			}
		})
	}
}

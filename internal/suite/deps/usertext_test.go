package deps

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// requirementID matches a cited requirement identifier: an area letter and
// a rule number (D9, R14). C0 and the like (control characters) are not
// ids, and neither is the X Window System in a user agent ("X11;").
var requirementID = regexp.MustCompile(`\b([ACDKLRTX][1-9][0-9]?)\b(;?)`)

// requirementIDs returns the ids cited in s.
func requirementIDs(s string) []string {
	var ids []string
	for _, m := range requirementID.FindAllStringSubmatch(s, -1) {
		if m[2] == "" {
			ids = append(ids, m[1])
		}
	}
	return ids
}

// reviewerPages are the documents written for reviewers, where ids may
// stand; docs/requirements.md defines them.
var reviewerPages = []string{"docs/requirements.md", "docs/coding-agents-findings.md"}

// userTextFiles are the files a user reads as they are: the README, the
// documents, the man pages (sources and roff), the shipped units and the
// shell completions.
func userTextFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"README.md", "docs/*.md", "man/*.md", "man/*.[1-8]", "systemd/*", "systemd/*/*", "packaging/completions/*", "cmd/collie-agent/testdata/example.toml"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			rel, _ := filepath.Rel(root, f)
			if info, err := os.Stat(f); err == nil && !info.IsDir() && !slices.Contains(reviewerPages, filepath.ToSlash(rel)) {
				files = append(files, f)
			}
		}
	}
	if len(files) < 10 {
		t.Fatalf("found only %d user-facing text files under %s: the scan is broken", len(files), root)
	}
	return files
}

// TestUserTextCitesNoRequirementIDs: users read sentences. The README, the
// documents, the man pages, every string the binaries can print (string
// literals outside tests) and every string the web app shows say a rule in
// words; the ids stay in code comments and tests.
func TestUserTextCitesNoRequirementIDs(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range userTextFiles(t, root) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if ids := requirementIDs(line); ids != nil {
				rel, _ := filepath.Rel(root, f)
				t.Errorf("%s:%d cites %v: say the rule in words (ids belong in code and tests): %s", rel, i+1, ids, strings.TrimSpace(line))
			}
		}
	}
	for _, lit := range goStringLiterals(t, root) {
		if ids := requirementIDs(lit.text); ids != nil {
			t.Errorf("%s: a string the program can print cites %v: say the rule in words", lit.pos, ids)
		}
	}
	jsString := regexp.MustCompile("'[^'\n]*'|\"[^\"\n]*\"|`[^`]*`")
	webFiles, _ := filepath.Glob(filepath.Join(root, "internal/bridge/device/web/*.js"))
	htmlFiles, _ := filepath.Glob(filepath.Join(root, "internal/bridge/device/web/*.html"))
	if len(webFiles) == 0 {
		t.Fatal("no web app scripts found: the scan is broken")
	}
	for _, f := range append(webFiles, htmlFiles...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			code := line
			if c := strings.Index(code, "// "); c >= 0 {
				code = code[:c]
			}
			for _, s := range jsString.FindAllString(code, -1) {
				if ids := requirementIDs(s); ids != nil {
					rel, _ := filepath.Rel(root, f)
					t.Errorf("%s:%d: the page shows %v: say the rule in words: %s", rel, i+1, ids, s)
				}
			}
		}
	}
}

// TestCitedRequirementIDsAreDefined: every id the code and tests cite is
// defined on the reviewers' page, docs/requirements.md.
func TestCitedRequirementIDsAreDefined(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(root, "docs/requirements.md"))
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\| ([A-Z][0-9]+) \|`).FindAllStringSubmatch(string(page), -1) {
		defined[m[1]] = true
	}
	if len(defined) < 50 {
		t.Fatalf("docs/requirements.md defines only %d ids: the table's shape changed", len(defined))
	}
	cited := 0
	for _, dir := range []string{"cmd", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(b), "\n") {
				for _, id := range requirementIDs(line) {
					cited++
					if !defined[id] {
						rel, _ := filepath.Rel(root, p)
						t.Errorf("%s:%d cites %s, which docs/requirements.md does not define", rel, i+1, id)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if cited == 0 {
		t.Fatal("no cited ids found: the scan is broken")
	}
}

type literal struct{ pos, text string }

// goStringLiterals returns the string literals of the module's non-test Go
// files, leaving out the test helpers' packages (they print to tests only).
func goStringLiterals(t *testing.T, root string) []literal {
	t.Helper()
	testOnly := []string{"internal/suite/e2e", "internal/testkit/testenv", "internal/testkit/systemdtest", "internal/testkit/tlstest",
		"internal/testkit/hostiletest", "internal/testkit/memnet", "internal/suite/deps", "internal/testkit/fakemodel", "internal/clientrun"}
	fset := token.NewFileSet()
	var out []literal
	for _, dir := range []string{"cmd", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			if d.IsDir() {
				for _, skip := range testOnly {
					if filepath.ToSlash(rel) == skip {
						return filepath.SkipDir
					}
				}
				if d.Name() == "testdata" || strings.HasSuffix(d.Name(), "test") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if bl, ok := n.(*ast.BasicLit); ok && bl.Kind == token.STRING {
					pos := fset.Position(bl.Pos())
					pos.Filename = filepath.ToSlash(rel)
					out = append(out, literal{pos.String(), bl.Value})
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(out) < 1000 {
		t.Fatalf("found only %d string literals: the scan is broken", len(out))
	}
	return out
}

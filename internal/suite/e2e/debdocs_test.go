package e2e

import (
	"bufio"
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
)

// The package's documentation folder, where dh_installdocs puts what
// debian/docs lists.
const docDir = "/usr/share/doc/collie"

var (
	// A doc of the tree named by its path in the tree (docs/phone.md, as
	// collie pair's hint does) or by its installed path. A docs/ path
	// inside a URL (…/blob/main/docs/x.md) is a web link, not a file.
	docInTree      = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./-])(docs/[A-Za-z0-9_-]+\.md)`)
	docInstalled   = regexp.MustCompile(`/usr/share/doc/collie/[A-Za-z0-9_./-]*[A-Za-z0-9_]`)
	readmeInTree   = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./-])README\.md`)
	manPageReferee = regexp.MustCompile(`\b(collie(?:-[a-z]+)?(?:\.toml)?)\(([1-8])\)`)
)

// docRef is one place a doc or man page is named, and the path the
// package must install for it.
type docRef struct {
	name      string // as written: docs/phone.md, collie.toml(5)
	installed string // /usr/share/doc/collie/phone.md, /usr/share/man/man5/collie.toml.5
	where     string // the file that names it
}

// namedDocs lists every doc path and collie man page named where a user
// reads it: the Go source's string literals under cmd/ and internal/ (what
// the binaries print), the man pages, README.md and the docs the package
// ships (which point on to others).
func namedDocs(t *testing.T) []docRef {
	t.Helper()
	var refs []docRef
	add := func(where, text string) {
		where = strings.TrimPrefix(where, "../../../")
		for _, m := range docInTree.FindAllStringSubmatch(text, -1) {
			refs = append(refs, docRef{m[1], docDir + "/" + filepath.Base(m[1]), where})
		}
		for _, m := range docInstalled.FindAllString(text, -1) {
			refs = append(refs, docRef{m, strings.TrimSuffix(m, "/"), where})
		}
		if readmeInTree.MatchString(text) {
			refs = append(refs, docRef{"README.md", docDir + "/README.md", where})
		}
		for _, m := range manPageReferee.FindAllStringSubmatch(strings.ReplaceAll(text, "*", ""), -1) {
			refs = append(refs, docRef{m[0], "/usr/share/man/man" + m[2] + "/" + m[1] + "." + m[2], where})
		}
	}
	for _, dir := range []string{"../../../cmd", "../../../internal"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil {
						add(path, s)
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	texts, err := filepath.Glob("../../../man/*.md")
	if err != nil {
		t.Fatal(err)
	}
	texts = append(texts, "../../../README.md")
	for _, doc := range debianList(t, "docs") {
		texts = append(texts, "../../../"+doc)
	}
	for _, path := range texts {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		add(path, string(data))
	}
	return refs
}

// debianList reads a debian/ file that lists one path a line.
func debianList(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open("../../../debian/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			lines = append(lines, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// packagedDocs is what debian/ says the package installs under
// /usr/share/doc/collie and /usr/share/man, each with the tree's file it
// comes from: debian/docs (dh_installdocs), debian/manpages
// (dh_installman) and the install lines of debian/rules.
func packagedDocs(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, src := range debianList(t, "docs") {
		out[docDir+"/"+filepath.Base(src)] = src
	}
	for _, src := range debianList(t, "manpages") {
		base := filepath.Base(src)
		out["/usr/share/man/man"+base[len(base)-1:]+"/"+base] = src
	}
	rules, err := os.ReadFile("../../../debian/rules")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^\tinstall .* (\S+) debian/collie(/usr/share/doc/collie/\S+)$`).FindAllStringSubmatch(string(rules), -1) {
		out[m[2]] = m[1]
	}
	return out
}

// TestPackageShipsNamedDocs_L4: every doc the binaries, the man pages,
// README.md or a shipped doc send the user to is in the package (debian/),
// and its source is in the tree. The install test checks the same list
// against what dpkg installed.
func TestPackageShipsNamedDocs_L4(t *testing.T) {
	shipped := packagedDocs(t)
	for _, src := range shipped {
		if _, err := os.Stat("../../../" + src); err != nil {
			t.Errorf("debian/ installs %s, which is not in the tree: %v", src, err)
		}
	}
	refs := namedDocs(t)
	if len(refs) < 10 {
		t.Fatalf("found only %d references to docs; the search is broken: %v", len(refs), refs)
	}
	seen := map[string]bool{}
	for _, r := range refs {
		// A name with .gz is the compressed file dh_compress makes of it.
		if _, ok := shipped[strings.TrimSuffix(r.installed, ".gz")]; !ok && !seen[r.installed] {
			seen[r.installed] = true
			t.Errorf("%s names %s, but the package does not install %s: add it to debian/docs (or debian/manpages)", r.where, r.name, r.installed)
		}
	}
}

// checkNamedDocsInstalled is TestPackageShipsNamedDocs_L4 on the installed
// package: every named doc is among the paths dpkg installed (compressed
// or not, as dh_compress chose).
func checkNamedDocsInstalled(t *testing.T, installed []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range namedDocs(t) {
		if seen[r.installed] {
			continue
		}
		seen[r.installed] = true
		if !slices.Contains(installed, r.installed) && !slices.Contains(installed, r.installed+".gz") {
			t.Errorf("L4: %s names %s, but the installed package has no %s", r.where, r.name, r.installed)
		}
	}
}

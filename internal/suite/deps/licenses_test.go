package deps

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// linkedModules reads testdata/linked-modules.txt (which
// TestBinariesLinkPinnedModules keeps equal to what go list reports): the
// third-party modules the binaries link, each once.
func linkedModules(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(modulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var mods []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && !strings.HasPrefix(line, "#") && !slices.Contains(mods, f[1]) {
			mods = append(mods, f[1])
		}
	}
	if len(mods) < 3 {
		t.Fatalf("%s names %d modules; the file is broken", modulesFile, len(mods))
	}
	return mods
}

// copyrightParagraphs splits a machine-readable debian/copyright into its
// paragraphs, each a map of field to value (continuation lines joined).
func copyrightParagraphs(text string) []map[string]string {
	var out []map[string]string
	for _, para := range strings.Split(text, "\n\n") {
		fields, last := map[string]string{}, ""
		for _, line := range strings.Split(para, "\n") {
			if strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t") {
				if last != "" {
					fields[last] += "\n" + strings.TrimSpace(line)
				}
				continue
			}
			if k, v, ok := strings.Cut(line, ":"); ok {
				last = k
				fields[k] = strings.TrimSpace(v)
			}
		}
		if len(fields) > 0 {
			out = append(out, fields)
		}
	}
	return out
}

// TestLinkedModulesLicensed: every third-party module a binary links has a
// Files paragraph in debian/copyright with its copyright and a license
// whose text is there, and a line in the README's Dependencies; and
// debian/copyright names no module the binaries no longer link.
func TestLinkedModulesLicensed(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	mods := linkedModules(t)
	b, err := os.ReadFile(filepath.Join(root, "debian", "copyright"))
	if err != nil {
		t.Fatal(err)
	}
	paras := copyrightParagraphs(string(b))
	texts := map[string]bool{} // stand-alone License paragraphs with a text
	files := map[string]map[string]string{}
	for _, p := range paras {
		if f, ok := p["Files"]; ok {
			files[f] = p
		} else if l, ok := p["License"]; ok {
			name, text, _ := strings.Cut(l, "\n")
			texts[name] = strings.TrimSpace(text) != ""
		}
	}
	for _, m := range mods {
		p, ok := files[m+"/*"]
		if !ok {
			t.Errorf("debian/copyright has no paragraph \"Files: %s/*\": the binaries link %s; add its copyright and license (the module's LICENSE in $(go env GOMODCACHE))", m, m)
			continue
		}
		if p["Copyright"] == "" || p["License"] == "" {
			t.Errorf("debian/copyright's paragraph for %s lacks its Copyright or License", m)
		}
		for _, name := range strings.FieldsFunc(p["License"], func(r rune) bool { return r == ' ' }) {
			if name != "and" && name != "or" && !texts[name] {
				t.Errorf("debian/copyright names license %s for %s but has no License paragraph with its text", name, m)
			}
		}
	}
	for f := range files {
		if m, ok := strings.CutSuffix(f, "/*"); ok && strings.Contains(m, ".") && !slices.Contains(mods, m) {
			t.Errorf("debian/copyright has a paragraph for %s, which the binaries do not link (%s): drop it", m, modulesFile)
		}
	}

	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, deps, ok := strings.Cut(string(readme), "\n## Dependencies\n")
	if !ok {
		t.Fatal("README.md has no \"## Dependencies\" section")
	}
	deps, _, _ = strings.Cut(deps, "\n## ")
	linked, _, _ := strings.Cut(deps, "The tests also use")
	for _, m := range mods {
		if !strings.Contains(linked, "`"+m+"`") {
			t.Errorf("README.md's Dependencies do not name `%s`, which the binaries link: say what it is for", m)
		}
	}
}

package deps

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeListsEveryGroup: the README's layout table has a row for each
// binary and each group under internal/, and every package of the module
// has a doc comment (a group's names its packages), so a newcomer finds
// each one's job from the door.
func TestReadmeListsEveryGroup(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(string(readme), -1) {
		listed[strings.TrimSuffix(m[1], "/")] = true
	}
	groups, err := filepath.Glob(filepath.Join(root, "internal", "*"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"cmd/collie", "cmd/collie-agent"}
	for _, g := range groups {
		if fi, err := os.Stat(g); err == nil && fi.IsDir() {
			want = append(want, "internal/"+filepath.Base(g))
			if _, err := os.Stat(filepath.Join(g, "doc.go")); err != nil && filepath.Base(g) != "bridge" && filepath.Base(g) != "cli" {
				t.Errorf("internal/%s has no doc.go: say what the group is and what it may import", filepath.Base(g))
			}
		}
	}
	for _, w := range want {
		if !listed[w] {
			t.Errorf("README.md's layout table has no row for %s", w)
		}
	}
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Doc}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, doc, _ := strings.Cut(line, "\t")
		if doc == "" {
			t.Errorf("%s has no package doc comment: say what it is for", path)
		}
	}
}

package deps

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// issueRef is a reference to a tracker's issue by number, also when a
// comment wraps the number onto the next line.
var issueRef = regexp.MustCompile(`(?i)\bissue\s*(?:(?://|#)\s*)?#?\d+`)

// TestNoIssueReferences: the tree says a rule in words, not a tracker
// issue's number: a newcomer has no tracker to look the number up in.
func TestNoIssueReferences(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "ls-files")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		testenv.Unavailable(t, "git cannot list the tree's files: "+err.Error())
	}
	scanned := 0
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		switch filepath.Ext(f) {
		case ".go", ".md", ".txtar", ".sh", ".toml", ".js", ".html":
		default:
			if filepath.Base(f) != "Makefile" {
				continue
			}
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue // listed but deleted in the work tree
		}
		scanned++
		for _, loc := range issueRef.FindAllIndex(b, -1) {
			line := 1 + strings.Count(string(b[:loc[0]]), "\n")
			t.Errorf("%s:%d refers to %q: state the rule in words", f, line, b[loc[0]:loc[1]])
		}
	}
	if scanned < 100 {
		t.Fatalf("scanned %d files: the listing is broken", scanned)
	}
}

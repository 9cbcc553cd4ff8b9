package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// md2man is the generator `make man` runs; keep the two in step.
const md2man = "github.com/cpuguy83/go-md2man/v2@v2.0.7"

// TestManPages_L4: every man page's roff is what `make man` makes of its
// Markdown source, and man --warnings has nothing to say about it.
func TestManPages_L4(t *testing.T) {
	sources, err := filepath.Glob("../../../man/*.md")
	if err != nil || len(sources) == 0 {
		t.Fatalf("no man/*.md: %v", err)
	}
	bin := t.TempDir()
	install := exec.Command("go", "install", md2man)
	install.Env = append(os.Environ(), "GOBIN="+bin)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install %s: %v\n%s", md2man, err, out)
	}
	manCmd, manErr := exec.LookPath("man")
	for _, src := range sources {
		roff := strings.TrimSuffix(src, ".md")
		t.Run(filepath.Base(roff), func(t *testing.T) {
			want, err := exec.Command(filepath.Join(bin, "go-md2man"), "-in", src).Output()
			if err != nil {
				t.Fatalf("go-md2man -in %s: %v", src, err)
			}
			got, err := os.ReadFile(roff)
			if err != nil {
				t.Fatalf("%v (run make man)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s is not what make man makes of %s; run make man", roff, src)
			}
			if manErr != nil {
				testenv.Unavailable(t, "man is not installed (Debian package man-db)")
			}
			cmd := exec.Command(manCmd, "--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", roff)
			cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8", "MANROFFSEQ=")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil || stderr.Len() > 0 {
				t.Errorf("man --warnings %s: %v\n%s", roff, err, stderr.String())
			}
		})
	}
}

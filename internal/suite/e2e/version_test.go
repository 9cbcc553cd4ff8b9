package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// TestOneVersion_R14: `make build` stamps both programs with the version
// of debian/changelog's top entry, the package's version without its
// Debian revision, and neither program has a second copy.
func TestOneVersion_R14(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		testenv.Unavailable(t, "make is not installed")
	}
	f, err := os.Open("../../../debian/changelog")
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(f).ReadString('\n')
	f.Close()
	m := regexp.MustCompile(`^collie \(([^)-]+)(-[^)]+)?\) `).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("debian/changelog starts with %q, not collie (VERSION-REVISION)", line)
	}
	want := m[1]

	bin := t.TempDir()
	cmd := exec.Command("make", "build", "BIN="+bin)
	cmd.Dir = "../../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	for _, p := range []string{"collie", "collie-agent"} {
		out, err := exec.Command(bin+"/"+p, "--version").Output()
		if err != nil {
			t.Fatalf("%s --version: %v", p, err)
		}
		if got := strings.TrimSpace(string(out)); got != p+" "+want {
			t.Errorf("R14: %s --version = %q; want %q (debian/changelog)", p, got, p+" "+want)
		}
	}
	out, err := exec.Command("make", "-s", "-C", "../../..", "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("R14: make version = %q; want %q", got, want)
	}
}

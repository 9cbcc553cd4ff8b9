package deps

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/testkit/testenv"
)

var update = flag.Bool("update", false, "rewrite testdata/linked-modules.txt from go list")

const modulesFile = "testdata/linked-modules.txt"

// TestBinariesLinkPinnedModules pins the third-party modules each binary
// links (tailscale's depaware in spirit): a new module, one dropped, or a
// version moved shows up as a diff of testdata/linked-modules.txt that a
// reviewer reads, instead of arriving unseen with an import.
func TestBinariesLinkPinnedModules(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		testenv.Unavailable(t, "the go command is not on PATH, so the linked modules cannot be listed")
	}
	var got []string
	for _, b := range binaries {
		cmd := exec.Command(gobin, "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}}{{end}}{{end}}", "./"+b)
		cmd.Dir = filepath.Join("..", "..", "..")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list %s: %v", b, err)
		}
		for _, m := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if m != "" {
				got = append(got, b+" "+m)
			}
		}
	}
	slices.Sort(got)
	got = slices.Compact(got)
	data, err := os.ReadFile(modulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var header, want []string
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		if strings.HasPrefix(line, "#") {
			header = append(header, line)
		} else if line != "" {
			want = append(want, line)
		}
	}
	if *update {
		text := strings.Join(append(header, got...), "\n") + "\n"
		if err := os.WriteFile(modulesFile, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("%s links %s, which %s does not list: review the module (its license, what it pulls in, whether the standard library would do), then run go test ./internal/suite/deps -update", strings.Fields(g)[0], strings.Join(strings.Fields(g)[1:], " "), modulesFile)
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s no longer links %s: run go test ./internal/suite/deps -update to drop it from %s", strings.Fields(w)[0], strings.Join(strings.Fields(w)[1:], " "), modulesFile)
		}
	}
}

package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/bridge/doctor"
	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// completions are the shell completions the package installs (L4).
var completions = map[string]string{
	"bash": "../../packaging/completions/collie.bash",
	"zsh":  "../../packaging/completions/_collie",
	"fish": "../../packaging/completions/collie.fish",
}

func needShell(t *testing.T, shell string) string {
	t.Helper()
	p, err := exec.LookPath(shell)
	if err != nil {
		testenv.Unavailablef(t, "%s is not installed (see .ci/deps)", shell)
	}
	return p
}

// TestCompletionsKnowEveryCommand_L4: each completion offers every command
// and flag of the command table (and of each command's --help) and every doctor check, and parses in its
// shell.
func TestCompletionsKnowEveryCommand_L4(t *testing.T) {
	var words []string
	for _, c := range commands() { // every command, subcommand and flag of the table
		words = append(words, strings.Fields(c.name)...)
		words = append(words, regexp.MustCompile(`--[a-z-]+`).FindAllString(strings.Join(c.synopsis, " "), -1)...)
		words = append(words, helpFlags(t, c)...)
	}
	words = append(words, doctor.Names()...)
	for shell, path := range completions {
		t.Run(shell, func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// Comments do not offer anything.
			b = regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAll(b, nil)
			for _, w := range words {
				// A flag as its name (fish spells it -l NAME); a command or
				// check as a word of its own, not inside a function's name.
				re := regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(w) + `($|[^A-Za-z0-9_])`)
				if strings.HasPrefix(w, "--") {
					re = regexp.MustCompile(regexp.QuoteMeta(strings.TrimPrefix(w, "--")))
				}
				if !re.Match(b) {
					t.Errorf("%s does not offer %q", path, w)
				}
			}
			sh := needShell(t, shell)
			if out, err := exec.Command(sh, "-n", path).CombinedOutput(); err != nil {
				t.Errorf("%s -n %s: %v\n%s", shell, path, err, out)
			}
		})
	}
}

// TestBashCompletion_L4: through bash-completion, as a user's shell loads
// it, `collie doctor --check d<TAB>` offers the checks that start with d.
func TestBashCompletion_L4(t *testing.T) {
	bash := needShell(t, "bash")
	const lib = "/usr/share/bash-completion/bash_completion"
	if _, err := os.Stat(lib); err != nil {
		testenv.Unavailablef(t, "%s is missing (Debian package bash-completion, see .ci/deps)", lib)
	}
	script := `source ` + lib + `; source "$1"
COMP_WORDS=(collie doctor --check d); COMP_CWORD=3
COMP_LINE="collie doctor --check d"; COMP_POINT=${#COMP_LINE}
_collie; printf '%s\n' "${COMPREPLY[@]}"`
	out, err := exec.Command(bash, "-c", script, "bash", completions["bash"]).CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	var want []string
	for _, n := range doctor.Names() {
		if strings.HasPrefix(n, "d") {
			want = append(want, n)
		}
	}
	if got := strings.Fields(string(out)); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("completion of 'collie doctor --check d' = %q; want %q", got, want)
	}
}

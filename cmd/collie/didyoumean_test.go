package main

import (
	"github.com/collie-linux/collie/internal/cli"

	"strings"
	"testing"
)

// TestUnknownCommandDidYouMean_L4: an unknown command, subcommand or flag
// near one of the table's says which was meant (edit distance over the
// command table and the command's flags), exit status 2; one near none
// says to run collie help.
func TestUnknownCommandDidYouMean_L4(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"shwo"}, `collie: error: unknown command "shwo"; did you mean collie show?`},
		{[]string{"doctr", "--check", "x"}, `collie: error: unknown command "doctr"; did you mean collie doctor?`},
		{[]string{"devics", "revoke", "x"}, `collie: error: unknown command "devics"; did you mean collie devices revoke?`},
		{[]string{"durabel", "list"}, `collie: error: unknown command "durabel"; did you mean collie durable list?`},
		{[]string{"durable", "atach", "x"}, `collie: error: unknown durable subcommand "atach"; did you mean collie durable attach?`},
		{[]string{"agents", "revok", "x"}, `collie: error: unknown agents subcommand "revok"; did you mean collie agents revoke?`},
		{[]string{"show", "--jsno"}, `collie: error: flag provided but not defined: --jsno; did you mean --json?`},
		{[]string{"doctor", "--chek", "config"}, `collie: error: flag provided but not defined: --chek; did you mean --check?`},
		{[]string{"qwertyuiop"}, `collie: error: unknown command "qwertyuiop"; run collie help`},
	} {
		code, out, errOut := collie(t, tt.args...)
		if code != cli.ExitUsage || out != "" || !strings.HasPrefix(errOut, tt.want+"\n") {
			t.Errorf("collie %q: exit %d, stdout %q, stderr %q; want 2 and %q", tt.args, code, out, errOut, tt.want)
		}
	}
}

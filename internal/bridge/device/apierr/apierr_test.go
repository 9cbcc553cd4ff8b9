package apierr

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// docCodes reads docs/device-api.md's list of codes: code → statuses.
func docCodes(t *testing.T) map[Code][]int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "device-api.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([a-z-]+)` \\| ([0-9, ]+) \\| .+ \\|$")
	out := map[Code][]int{}
	for line := range strings.SplitSeq(string(data), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if _, dup := out[Code(m[1])]; dup {
			t.Errorf("docs/device-api.md lists %s twice", m[1])
		}
		for s := range strings.SplitSeq(m[2], ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				t.Fatalf("docs/device-api.md: status %q of %s", s, m[1])
			}
			out[Code(m[1])] = append(out[Code(m[1])], n)
		}
	}
	if len(out) == 0 {
		t.Fatal("docs/device-api.md has no list of codes")
	}
	return out
}

// TestTableMatchesTheDocs: every code of the table is in
// docs/device-api.md's list with the statuses it is sent with, and every
// code the list names is one of the table's.
func TestTableMatchesTheDocs(t *testing.T) {
	docs := docCodes(t)
	have := map[Code][]int{}
	for _, row := range rows() {
		if !slices.Contains(have[row.Code], row.Status) {
			have[row.Code] = append(have[row.Code], row.Status)
		}
	}
	for code, statuses := range have {
		slices.Sort(statuses)
		want, ok := docs[code]
		if !ok {
			t.Errorf("the table's code %s is not in docs/device-api.md", code)
			continue
		}
		slices.Sort(want)
		if !slices.Equal(statuses, want) {
			t.Errorf("%s: the table sends %v, docs/device-api.md says %v", code, statuses, want)
		}
	}
	for code := range docs {
		if _, ok := have[code]; !ok {
			t.Errorf("docs/device-api.md lists %s, which no refusal of the table sends", code)
		}
	}
	if len(Codes()) != len(have) {
		t.Errorf("Codes() lists %d codes, the table has %d", len(Codes()), len(have))
	}
}

// TestEveryRowIsASentence: every reason has a row; each row's status is an
// error's; its message is a sentence without a final full stop (the page
// adds the hint after it); and filled in with arguments for its verbs it
// says nothing fmt would complain of.
func TestEveryRowIsASentence(t *testing.T) {
	rows := rows()
	if len(rows) != int(reasons)-1 {
		t.Fatalf("%d rows for %d reasons", len(rows), int(reasons)-1)
	}
	for reason, row := range rows {
		if row.Code == "" || row.Status < 400 || row.Message == "" {
			t.Errorf("reason %d: %+v", reason, row)
			continue
		}
		for _, s := range []string{row.Message, row.Hint} {
			if strings.HasSuffix(s, ".") || s != strings.TrimSpace(s) {
				t.Errorf("%s: %q ends with a full stop or a space", row.Code, s)
			}
		}
		args := make([]any, verbs(row.Message)+verbs(row.Hint))
		for i := range args {
			args[i] = "x"
		}
		if strings.Contains(row.Message+row.Hint, "%d") {
			for i := range args {
				args[i] = 1
			}
		}
		w := httptest.NewRecorder()
		r := Refuse(w, reason, args...)
		if strings.Contains(r.Message+r.Hint, "%!") {
			t.Errorf("%s: %q / %q", row.Code, r.Message, r.Hint)
		}
		if w.Code != row.Status || !strings.Contains(w.Body.String(), `"code":"`+string(row.Code)+`"`) || w.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("%s: wrote %d %s", row.Code, w.Code, w.Body)
		}
		if (row.Hint == "") == strings.Contains(w.Body.String(), `"hint"`) {
			t.Errorf("%s: hint %q, body %s", row.Code, row.Hint, w.Body)
		}
	}
	if got := New(StaleRevision, 3, 2).Message; got != "the question changed (revision 3, not 2); read it again before you answer" {
		t.Errorf("StaleRevision: %q", got)
	}
	if got := New(NoSuchWrite, "x", "a, b"); got.Message != `there is no write called "x"` || got.Hint != "use one of a, b" || got.Status != http.StatusNotFound {
		t.Errorf("NoSuchWrite: %+v", got)
	}
}

// rows is the table, by reason.
func rows() map[Reason]Row {
	out := make(map[Reason]Row, len(table))
	for r, row := range table {
		if r != 0 {
			out[Reason(r)] = row
		}
	}
	return out
}

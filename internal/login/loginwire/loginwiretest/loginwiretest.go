// Package loginwiretest holds tests of the agent surface to its
// documentation: the refusal codes docs/agent-login.md lists, with their
// statuses, and the one shape every refusal has.
package loginwiretest

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/login/loginwire"
	"github.com/collie-linux/collie/internal/protocol/jsonstrict"
)

// Shape is the refusal's shape exactly as the doc states it.
const Shape = `{"error":{"code":CODE,"message":SENTENCE}}`

var row = regexp.MustCompile("^\\| `([a-z_-]+)` \\| ([0-9, ]+) \\|")

// DocRefusals reads the table of refusal codes of docs/agent-login.md:
// each code and the statuses it comes with. It fails t when the doc does
// not state the shape.
func DocRefusals(t testing.TB) map[string][]int {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "docs", "agent-login.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	if !strings.Contains(doc, "    "+Shape+"\n") {
		t.Fatalf("docs/agent-login.md does not state the refusal shape %s", Shape)
	}
	codes := map[string][]int{}
	for _, line := range strings.Split(doc, "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, st := range strings.Split(m[2], ",") {
			n, err := strconv.Atoi(strings.TrimSpace(st))
			if err != nil {
				t.Fatalf("docs/agent-login.md: the status %q of %s", st, m[1])
			}
			codes[m[1]] = append(codes[m[1]], n)
		}
	}
	if len(codes) == 0 {
		t.Fatal("docs/agent-login.md lists no refusal codes")
	}
	return codes
}

// CheckRefusal fails t unless a reply of status with header h and body is
// a refusal as the doc says: the one shape (closed: no other member), a
// code the doc lists with this status, a sentence, and on a 401 the
// bearer challenge. It returns the code.
func CheckRefusal(t testing.TB, doc map[string][]int, status int, h http.Header, body string) string {
	t.Helper()
	var e loginwire.ErrorBody
	if err := jsonstrict.Unmarshal([]byte(body), &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Errorf("HTTP %d: not the refusal shape %s (%v): %s", status, Shape, err, body)
		return ""
	}
	if !slices.Contains(doc[e.Error.Code], status) {
		t.Errorf("HTTP %d %s: docs/agent-login.md lists this code with %v", status, e.Error.Code, doc[e.Error.Code])
	}
	if status == http.StatusUnauthorized && !strings.Contains(h.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Errorf("a 401 without the bearer challenge: %v", h)
	}
	return e.Error.Code
}

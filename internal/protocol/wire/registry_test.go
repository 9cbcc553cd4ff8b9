package wire

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// c2Writes reads the writes C2 names from testdata/spec-C2.txt: the
// backquoted words before "from itself".
func c2Writes(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("testdata/spec-C2.txt")
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for l := range strings.Lines(string(data)) {
		if strings.HasPrefix(l, "C2 ") {
			line = l
		}
	}
	list, _, ok := strings.Cut(line, "from itself")
	if !ok {
		t.Fatal("testdata/spec-C2.txt holds no C2 line with its list of writes")
	}
	var names []string
	for _, m := range regexp.MustCompile("`([a-z]+)`").FindAllStringSubmatch(list, -1) {
		names = append(names, m[1])
	}
	return names
}

// TestRegistry holds each row of the registry to its parts: a unique name,
// the agent's route /v1/NAME, a request type whose Name is the row's and
// whose ID is its requestId, audit events of A3, and the caller check on
// exactly the writes C2 lists, in its order.
func TestRegistry(t *testing.T) {
	a3 := []string{EventAnswer, EventSend, EventAbort, EventAction, EventStarterStart, EventDurableReopen,
		EventSpaceRename, EventPaneClose, EventPaneRename, EventTabRename}
	seen := map[string]bool{}
	var checked []string
	for _, w := range Writes() {
		t.Run(w.Name, func(t *testing.T) {
			if seen[w.Name] || seen[w.Path] {
				t.Fatalf("the name or route of %q is in the registry twice", w.Name)
			}
			seen[w.Name], seen[w.Path] = true, true
			if w.Path != "/v1/"+w.Name {
				t.Errorf("route %s, want /v1/%s", w.Path, w.Name)
			}
			a, b := w.New(), w.New()
			if a == nil || a == b {
				t.Fatalf("New must return a new empty request each time: %p %p", a, b)
			}
			if a.Name() != w.Name {
				t.Errorf("New().Name() = %q", a.Name())
			}
			body := fmt.Sprintf(`{"requestId":"rid-%s"}`, w.Name)
			if err := unmarshalClosed([]byte(body), a); err != nil {
				t.Fatal(err)
			}
			if a.ID() != "rid-"+w.Name {
				t.Errorf("ID() = %q after decoding %s", a.ID(), body)
			}
			if len(w.Events) == 0 {
				t.Error("no audit event")
			}
			for _, ev := range w.Events {
				if !slices.Contains(a3, ev) {
					t.Errorf("audit event %q is not one of A3's", ev)
				}
			}
			if got, err := WriteNamed(w.Name); err != nil || got.Path != w.Path {
				t.Errorf("WriteNamed(%q) = %v, %v", w.Name, got.Path, err)
			}
			if got, err := WriteAt(w.Path); err != nil || got.Name != w.Name {
				t.Errorf("WriteAt(%q) = %v, %v", w.Path, got.Name, err)
			}
		})
		if w.CallerCheck {
			checked = append(checked, w.Name)
		}
	}
	t.Run("C2_caller_check_list", func(t *testing.T) {
		if want := c2Writes(t); !slices.Equal(checked, want) {
			t.Fatalf("the registry's caller check covers %v; C2 lists %v", checked, want)
		}
	})
	t.Run("copy", func(t *testing.T) {
		ws := Writes()
		ws[0].Name, ws[0].Events[0] = "x", "x"
		if w := Writes()[0]; w.Name == "x" || w.Events[0] == "x" {
			t.Fatal("Writes returned the registry itself")
		}
	})
}

// TestRegistryUnknown: a name or route outside the registry is an error
// (ErrUnknownWrite) everywhere it is looked up, never another write.
func TestRegistryUnknown(t *testing.T) {
	for _, name := range []string{"", "nope", "Answer", "answer ", "ask", "grants", "/v1/answer", "starter.start"} {
		if w, err := WriteNamed(name); !errors.Is(err, ErrUnknownWrite) {
			t.Errorf("WriteNamed(%q) = %+v, %v; want ErrUnknownWrite", name, w, err)
		}
	}
	for _, path := range []string{"", "/v1/nope", AskPath, GrantsPath, RevokePath, HelloPath, "/v1/answer/", "/v1/Answer", "answer"} {
		if w, err := WriteAt(path); !errors.Is(err, ErrUnknownWrite) {
			t.Errorf("WriteAt(%q) = %+v, %v; want ErrUnknownWrite", path, w, err)
		}
	}
}

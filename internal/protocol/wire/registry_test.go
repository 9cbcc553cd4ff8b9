package wire

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
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
// the agent's route /v1/NAME, a new empty request each time whose request
// id is its Header's, and the writes C2 lists for the caller check, in its
// order, which the agent checks on every write.
func TestRegistry(t *testing.T) {
	seen := map[string]bool{}
	var names []string
	for _, w := range Writes() {
		names = append(names, w.Name)
		t.Run(w.Name, func(t *testing.T) {
			if seen[w.Name] || seen[w.Path] {
				t.Fatalf("the name or route of %q is in the registry twice", w.Name)
			}
			seen[w.Name], seen[w.Path] = true, true
			if w.Path != "/v1/"+w.Name {
				t.Errorf("route %s, want /v1/%s", w.Path, w.Name)
			}
			a, b := w.New(), w.New()
			if a == nil || a == b || a.Head() == b.Head() {
				t.Fatalf("New must return a new empty request each time: %p %p", a, b)
			}
			body := fmt.Sprintf(`{"requestId":"rid-%s"}`, w.Name)
			if err := unmarshalClosed([]byte(body), a); err != nil {
				t.Fatal(err)
			}
			if a.Head().RequestID != "rid-"+w.Name {
				t.Errorf("the request id is %q after decoding %s", a.Head().RequestID, body)
			}
			if got, err := WriteNamed(w.Name); err != nil || got.Path != w.Path {
				t.Errorf("WriteNamed(%q) = %v, %v", w.Name, got.Path, err)
			}
			if got, err := WriteAt(w.Path); err != nil || got.Name != w.Name {
				t.Errorf("WriteAt(%q) = %v, %v", w.Path, got.Name, err)
			}
		})
	}
	t.Run("C2_caller_check_list", func(t *testing.T) {
		if want := c2Writes(t); !slices.Equal(names, want) {
			t.Fatalf("the registry's writes are %v; C2 lists %v for the caller check", names, want)
		}
	})
	t.Run("copy", func(t *testing.T) {
		ws := Writes()
		ws[0].Name = "x"
		if w := Writes()[0]; w.Name == "x" {
			t.Fatal("Writes returned the registry itself")
		}
	})
}

// TestRegistryTables: the validators have a row for exactly the writes of
// the registry, so a write added without its validator (or a validator
// left for a write that is gone) fails here; the agent's handlers and the
// audit log's events are held to the registry the same way in their
// packages. Each validator takes the request its write's row makes and
// refuses every other write's.
func TestRegistryTables(t *testing.T) {
	var names, rows []string
	for _, w := range Writes() {
		names = append(names, w.Name)
	}
	for name := range validators {
		rows = append(rows, name)
	}
	sort.Strings(names)
	sort.Strings(rows)
	if !slices.Equal(rows, names) {
		t.Errorf("the validators check the writes %v; the registry has %v", rows, names)
	}
	for _, w := range Writes() {
		for _, other := range Writes() {
			req := other.New()
			req.Head().RequestID = "r"
			err := w.Check(req)
			if other.Name != w.Name && !errors.Is(err, ErrUnknownWrite) {
				t.Errorf("%s checked a %T as its own: %v", w.Name, req, err)
			}
			if other.Name == w.Name && errors.Is(err, ErrUnknownWrite) {
				t.Errorf("%s refused its own request: %v", w.Name, err)
			}
		}
	}
}

// ninthRequest is a write that is not in the registry: what a new one
// would be, a struct that embeds Header.
type ninthRequest struct {
	Header
	Thing string `json:"thing"`
}

// TestNinthWrite: a new write is a request type and a row; everything else
// the registry gives it follows from the row (its route, its request id,
// its decoding with the closed schema), and what it lacks is a row in each
// table keyed by its name: here the validator, which Check does not fall
// back on another write's for (TestRegistryTables, and the handlers and
// audit events in their packages, name the table a new row is missing
// from).
func TestNinthWrite(t *testing.T) {
	w := row[ninthRequest]("ninth")
	if w.Name != "ninth" || w.Path != "/v1/ninth" {
		t.Fatalf("row: %+v", w)
	}
	req := w.New()
	if _, ok := req.(*ninthRequest); !ok {
		t.Fatalf("New made a %T", req)
	}
	body := `{"requestId":"r-9","thing":"x"}`
	err := w.Decode(strings.NewReader(body), int64(len(body)), req)
	if req.Head().RequestID != "r-9" || req.(*ninthRequest).Thing != "x" {
		t.Fatalf("decoded %+v", req)
	}
	if !errors.Is(err, ErrUnknownWrite) || !strings.Contains(err.Error(), "no validator") {
		t.Fatalf("a write with no validator: %v; want ErrUnknownWrite naming the validator", err)
	}
	bad := `{"requestId":"r-9","thing":"x","shell":"rm"}`
	if err := w.Decode(strings.NewReader(bad), int64(len(bad)), w.New()); err == nil || !strings.Contains(err.Error(), "unknown field") {
		t.Fatalf("an unknown field: %v", err)
	}
	bad = `{"requestId":"r 9","thing":"x"}`
	if err := w.Decode(strings.NewReader(bad), int64(len(bad)), w.New()); err == nil || !strings.Contains(err.Error(), "requestId") {
		t.Fatalf("a bad request id is refused before any validator: %v", err)
	}
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

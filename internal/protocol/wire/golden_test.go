package wire

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden and testdata/delta")

// goldenBodies are request bodies of every write, valid and not, with the
// ask and revoke bodies next to them: the golden file pins, for each, the
// JSON the agent hashes and forwards (what a decoded request encodes to)
// or the sentence a refusal says.
var goldenBodies = []struct{ write, body string }{
	{AnswerWrite, `{"requestId":"r1","conversation":"c","question":"q","revision":1,"optionIds":["yes"],"always":true,"reason":"ok"}`},
	{AnswerWrite, `{"requestId":"r1","conversation":"c","question":"q","revision":3,"values":{"b":"2","a":"1"}}`},
	{AnswerWrite, `{"requestId":"r1","conversation":"c","question":"q","revision":3,"text":"a line"}`},
	{AnswerWrite, `{"requestId":"r1","conversation":"c","question":"q","revision":1}`},
	{AnswerWrite, `{"requestId":"r1","conversation":"c","question":"q","revision":1,"optionIds":["no"],"always":true}`},
	{AnswerWrite, `{"requestId":"r1","conversation":"c","question":"q","revision":-1,"optionIds":["yes"]}`},
	{AnswerWrite, `{"requestId":"r1","conversation":"c","question":"q","revision":1,"values":{}}`},
	{AnswerWrite, `{"requestId":"r1","conversation":"c","question":"q/1","revision":1,"optionIds":["yes"]}`},
	{AnswerWrite, `{"conversation":"c","question":"q","revision":1,"optionIds":["yes"]}`},
	{AnswerWrite, `{"requestId":"r1","conversation":"c","question":"q","revision":1,"optionIds":["yes"],"confirm":"x"}`},
	{SendWrite, `{"requestId":"r","conversation":"c","text":"hi","steer":true}`},
	{SendWrite, `{"requestId":"r","conversation":"c","text":""}`},
	{SendWrite, `{"conversation":"c","text":"hi"}`},
	{SendWrite, `{"requestId":"r x","conversation":"c","text":"hi"}`},
	{SendWrite, `{"requestId":5,"conversation":"c","text":"hi"}`},
	{SendWrite, `{"requestId":null,"conversation":"c","text":"hi"}`},
	{SendWrite, `{"RequestId":"r","conversation":"c","text":"hi"}`},
	{SendWrite, `{"requestId":"r","requestId":"s","conversation":"c","text":"hi"}`},
	{AbortWrite, `{"requestId":"r","conversation":"c","question":"q"}`},
	{AbortWrite, `{"requestId":"r","conversation":"c"}`},
	{AbortWrite, `{"requestId":"r","conversation":""}`},
	{ActionWrite, `{"requestId":"r","action":"restart","conversation":"c"}`},
	{ActionWrite, `{"requestId":"r","action":"a/b"}`},
	{RenameWrite, `{"requestId":"r","space":"s","title":"New name"}`},
	{RenameWrite, `{"requestId":"r","tab":"t","title":"Tab"}`},
	{RenameWrite, `{"requestId":"r","conversation":"c","title":"Conv"}`},
	{RenameWrite, `{"requestId":"r","title":"x"}`},
	{RenameWrite, `{"requestId":"r","tab":"t","space":"s","title":"x"}`},
	{RenameWrite, `{"requestId":"r","tab":"t","title":"   "}`},
	{CloseWrite, `{"requestId":"r","conversation":"c"}`},
	{CloseWrite, `{"requestId":"","conversation":"c"}`},
	{ReopenWrite, `{"requestId":"r","conversation":"c"}`},
	{ReopenWrite, `{"requestId":"r"}`},
	{StarterWrite, `{"requestId":"r","starter":"tests"}`},
	{StarterWrite, `{"requestId":"r","starter":"tests","shell":"rm -rf ~"}`},
	{StarterWrite, `{"requestId":"r","starter":"a"}{"requestId":"r","starter":"b"}`},
	{StarterWrite, `{"requestId":"r"}`},
	{"ask", `{"requestId":"r","kind":"choice","title":"Where?","options":[{"id":"a","label":"A"},{"id":"b","label":"B"}]}`},
	{"ask", `{"requestId":"r","kind":"line","title":"Q","waitSeconds":51}`},
	{"revoke", `{"grant":"g-1","all":true}`},
	{"revoke", `{"grant":"g-1"}`},
}

// decodeGolden decodes body as the write (or ask, or revoke) called name.
func decodeGolden(t *testing.T, name, body string) (any, error) {
	t.Helper()
	var req Request
	switch name {
	case "ask":
		req = new(AskRequest)
	case "revoke":
		req = new(RevokeRequest)
	default:
		w, err := WriteNamed(name)
		if err != nil {
			t.Fatal(err)
		}
		wreq := w.New()
		return wreq, w.Decode(strings.NewReader(body), int64(len(body)), wreq)
	}
	return req, DecodeRequest(strings.NewReader(body), int64(len(body)), req)
}

// TestGoldenRequests pins the protocol's request bodies byte for byte:
// what each decodes to and encodes as, or how it is refused, is in
// testdata/golden/requests.txt (go test -update rewrites it after a
// deliberate change). A change to how requests are described in Go must
// leave it as it is: the wire does not change.
func TestGoldenRequests(t *testing.T) {
	var out bytes.Buffer
	for _, g := range goldenBodies {
		req, err := decodeGolden(t, g.write, g.body)
		fmt.Fprintf(&out, "%s %s\n", g.write, g.body)
		if err != nil {
			fmt.Fprintf(&out, "  refused: %v\n", err)
			continue
		}
		b, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "  encodes: %s\n", b)
	}
	var rows []string
	for _, w := range Writes() {
		rows = append(rows, w.Name+" "+w.Path)
	}
	fmt.Fprintf(&out, "registry: %s\n", strings.Join(rows, ", "))
	golden(t, "requests.txt", out.Bytes())
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; run go test -update to write it", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the requests differ from %s (go test -update rewrites it after a deliberate change):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

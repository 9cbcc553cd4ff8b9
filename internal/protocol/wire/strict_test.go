package wire

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// fullSnapshot sets every field of every snapshot type, so its JSON names
// every member of the schema.
func fullSnapshot() Snapshot {
	return Snapshot{
		Spaces: []Space{{ID: "s", Title: "S", Tabs: []Tab{{ID: "t", Title: "T", Conversations: []Conversation{{
			ID: "c", Title: "C", Closed: true,
			Items: []Item{
				{ID: "i1", Kind: KindCode, Role: "agent", Text: "x", Language: "go", URL: "https://example.invalid/"},
				{ID: "i2", Kind: KindToolCall, Tool: &ToolCall{Name: "make", Summary: "s", Output: "o", Status: "done"}},
			},
			Questions: []Question{{
				ID: "q", Kind: AskChoice, Title: "Q", Rationale: "R", Revision: 1, ToolCall: "tc", AllowAlways: true,
				AlwaysScope: &Scope{Tool: "Bash", CommandPrefix: "git", DurationSeconds: 60, Text: "t"},
				Options:     []Option{{ID: "a", Label: "A"}}, Fields: []Field{{ID: "f", Label: "F"}}, Shortened: true,
			}},
		}}}}}},
		Belt:     []Button{{ID: "b", Label: "B"}},
		Starters: []Starter{{ID: "st", Label: "St"}},
	}
}

var memberName = regexp.MustCompile(`"([a-zA-Z]+)":`)

// variants returns, for each member of the JSON object text js, the text
// with that one member's name in another case, and with that member given
// twice (the first copy null).
func variants(t *testing.T, js string) (wrongCase, twice map[string]string) {
	t.Helper()
	wrongCase, twice = map[string]string{}, map[string]string{}
	for i, m := range memberName.FindAllStringSubmatchIndex(js, -1) {
		name := js[m[2]:m[3]]
		upper := string(unicode.ToUpper(rune(name[0]))) + name[1:]
		if upper == name {
			upper = strings.ToLower(name)
		}
		key := name + "#" + string(rune('a'+i%26))
		wrongCase[key] = js[:m[2]] + upper + js[m[3]:]
		twice[key] = js[:m[0]] + `"` + name + `":null,` + js[m[0]:]
	}
	if len(wrongCase) == 0 {
		t.Fatal("no members found")
	}
	return wrongCase, twice
}

// TestParseSnapshotExactCase: every member of the snapshot schema, at every
// depth, is refused in another case ("ID", "Title") or given twice, where
// encoding/json took the first for its field and kept the last of two.
func TestParseSnapshotExactCase(t *testing.T) {
	b, err := json.Marshal(fullSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ParseSnapshot(b); err != nil {
		t.Fatalf("the full snapshot is refused: %v", err)
	}
	wrongCase, twice := variants(t, string(b))
	for name, js := range wrongCase {
		t.Run("X1_wrong_case/"+name, func(t *testing.T) {
			_, _, err := ParseSnapshot([]byte(js))
			if err == nil || !strings.Contains(err.Error(), "unknown field") {
				t.Fatalf("err = %v, want unknown field", err)
			}
		})
	}
	for name, js := range twice {
		t.Run("X1_twice/"+name, func(t *testing.T) {
			_, _, err := ParseSnapshot([]byte(js))
			if err == nil || !strings.Contains(err.Error(), "appears twice") {
				t.Fatalf("err = %v, want appears twice", err)
			}
		})
	}
}

func TestDecodeHelloExactCase(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"wrong_case", `{"Protocol":1,"agent":"a"}`, `unknown field "Protocol"`},
		{"wrong_case_agent", `{"protocol":1,"Agent":"a"}`, `unknown field "Agent"`},
		{"twice", `{"protocol":1,"agent":"a","agent":"b"}`, `field "agent" appears twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeHello(strings.NewReader(tc.body), -1)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestDecodeHelloInvalidUTF8: the agent's name is display text, cleaned on
// arrival: invalid UTF-8 is replaced by U+FFFD (collie-durable(7), CLEANING).
func TestDecodeHelloInvalidUTF8(t *testing.T) {
	h, err := DecodeHello(strings.NewReader("{\"protocol\":1,\"agent\":\"a\xffb\\ud800\"}"), -1)
	if err != nil {
		t.Fatal(err)
	}
	if h.Agent != "a\uFFFDb\uFFFD" {
		t.Fatalf("agent = %+q, want U+FFFD for each broken sequence", h.Agent)
	}
}

func TestDecodeErrorExactCase(t *testing.T) {
	for _, body := range []string{
		`{"error":{"Code":"busy","message":"m"}}`,
		`{"Error":{"code":"busy","message":"m"}}`,
		`{"error":{"code":"busy","code":"caller-refused","message":"m"}}`,
		`{"error":{"code":"busy","message":"m"},"extra":1}`,
	} {
		if code, _, ok := DecodeError([]byte(body)); ok {
			t.Errorf("DecodeError(%s) = %q, ok; want not an error body", body, code)
		}
	}
	code, msg, ok := DecodeError([]byte("{\"error\":{\"code\":\"busy\",\"message\":\"m\xff\"}}"))
	if !ok || code != "busy" || msg != "m\uFFFD" {
		t.Errorf("an error body with invalid UTF-8 in its message: %q %+q %v; want it read, replaced", code, msg, ok)
	}
}

// TestParseSnapshotInvalidUTF8: display text keeps U+FFFD in place of
// invalid UTF-8 (cleaning step 1), but an id is never changed (X5): an
// object whose id was not valid UTF-8 is dropped, not renamed.
func TestParseSnapshotInvalidUTF8(t *testing.T) {
	js := "{\"spaces\":[{\"id\":\"s\",\"title\":\"Ti\xfftle\",\"tabs\":[{\"id\":\"t\",\"title\":\"T\",\"conversations\":[" +
		"{\"id\":\"c1\",\"title\":\"one\",\"items\":[{\"id\":\"i\xff\",\"kind\":\"text\",\"text\":\"gone\"},{\"id\":\"i2\",\"kind\":\"text\",\"text\":\"x\\udc00y\"}]," +
		"\"questions\":[{\"id\":\"q\",\"kind\":\"yes-no\",\"title\":\"Q\",\"revision\":1,\"toolCall\":\"k\\ud800\"}]}," +
		"{\"id\":\"c\xfe\",\"title\":\"two\"}]}]}],\"belt\":[{\"id\":\"b\\ud800\",\"label\":\"B\"}]}"
	s, rep, err := ParseSnapshot([]byte(js))
	if err != nil {
		t.Fatalf("a snapshot with invalid UTF-8 in its text is refused: %v", err)
	}
	if got := s.Spaces[0].Title; got != "Ti\uFFFDtle" {
		t.Errorf("title = %+q, want U+FFFD in place", got)
	}
	convs := s.Spaces[0].Tabs[0].Conversations
	if len(convs) != 1 || convs[0].ID != "c1" {
		t.Fatalf("X5: conversations = %+v, want only c1 (c\\xfe dropped)", convs)
	}
	if items := convs[0].Items; len(items) != 1 || items[0].ID != "i2" || items[0].Text != "x\uFFFDy" {
		t.Errorf("X5: items = %+v, want only i2, its text with U+FFFD", items)
	}
	if len(convs[0].Questions) != 0 {
		t.Errorf("X5: a question whose tool-call key was not valid UTF-8 stays: %+v", convs[0].Questions)
	}
	if len(s.Belt) != 0 {
		t.Errorf("X5: belt = %+v, want the button with a broken id dropped", s.Belt)
	}
	found := false
	for _, d := range rep.Dropped {
		found = found || strings.Contains(d.Reason, `replaced by U+FFFD (the first at "/spaces/0/title")`)
	}
	if !found {
		t.Errorf("the report does not say invalid UTF-8 was replaced: %+v", rep.Dropped)
	}
	// A snapshot that is valid UTF-8 keeps an id that holds U+FFFD itself.
	ok := `{"spaces":[{"id":"s\ufffd","title":"T"}]}`
	if s, _, err := ParseSnapshot([]byte(ok)); err != nil || len(s.Spaces) != 1 {
		t.Errorf("a valid id with U+FFFD: %+v, %v", s, err)
	}
}

// fullRequests has one request of every write of the registry, an ask
// and a revoke, with every field set.
func fullRequests() map[string]any {
	return map[string]any{
		"answer":  &AnswerRequest{Header: Header{RequestID: "r"}, Conversation: "c", Question: "q", Revision: 1, OptionIDs: []string{"yes"}, Text: "t", Values: map[string]string{"field-1": "v"}, Always: true, Reason: "why"},
		"send":    &SendRequest{Header: Header{RequestID: "r"}, Conversation: "c", Text: "hi", Steer: true},
		"abort":   &AbortRequest{Header: Header{RequestID: "r"}, Conversation: "c", Question: "q"},
		"action":  &ActionRequest{Header: Header{RequestID: "r"}, Action: "a", Conversation: "c"},
		"rename":  &RenameRequest{Header: Header{RequestID: "r"}, Space: "s", Tab: "t", Conversation: "c", Title: "T"},
		"close":   &CloseRequest{Header: Header{RequestID: "r"}, Conversation: "c"},
		"reopen":  &ReopenRequest{Header: Header{RequestID: "r"}, Conversation: "c"},
		"starter": &StarterRequest{Header: Header{RequestID: "r"}, Starter: "s"},
		"ask": &AskRequest{RequestID: "r", Kind: AskChoice, Title: "T", Rationale: "R", Options: []Option{{ID: "a", Label: "A"}}, Fields: []Field{{ID: "f", Label: "F"}},
			ToolCall: "k", Tool: &ToolRef{Name: "Bash", Command: "ls"}, TimeoutSeconds: 1, WaitSeconds: 1},
		"revoke": &RevokeRequest{Grant: "g", All: true},
	}
}

// TestDecodeRequestExactCase: a device's write and a local ask are refused
// with a member in another case or given twice, whichever member it is, on
// the device API and in the agent alike (both use DecodeRequest).
func TestDecodeRequestExactCase(t *testing.T) {
	for kind, req := range fullRequests() {
		b, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		wrongCase, twice := variants(t, string(b))
		for name, js := range wrongCase {
			t.Run(kind+"/wrong_case/"+name, func(t *testing.T) {
				err := decodeKind(kind, js)
				if err == nil || !strings.Contains(err.Error(), "unknown field") {
					t.Fatalf("err = %v, want unknown field", err)
				}
			})
		}
		for name, js := range twice {
			t.Run(kind+"/twice/"+name, func(t *testing.T) {
				err := decodeKind(kind, js)
				if err == nil || !strings.Contains(err.Error(), "appears twice") {
					t.Fatalf("err = %v, want appears twice", err)
				}
			})
		}
	}
}

// decodeKind decodes js as a request of kind (a key of fullRequests), as
// the agent and the device API do: a write by its registry row, an ask
// or a revoke with DecodeRequest.
func decodeKind(kind, js string) error {
	switch kind {
	case "ask":
		return DecodeRequest(strings.NewReader(js), -1, new(AskRequest))
	case "revoke":
		return DecodeRequest(strings.NewReader(js), -1, new(RevokeRequest))
	}
	w, err := WriteNamed(kind)
	if err != nil {
		return err
	}
	return w.Decode(strings.NewReader(js), -1, w.New())
}

var stringValue = regexp.MustCompile(`:"([a-zA-Z ]+)"`)

// TestDecodeRequestInvalidUTF8 (X4): invalid UTF-8 or a
// lone surrogate escape in any string of a write is refused with a 400
// naming the field; it is never replaced by U+FFFD and forwarded.
func TestDecodeRequestInvalidUTF8(t *testing.T) {
	for kind, req := range fullRequests() {
		b, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		js := string(b)
		for _, m := range stringValue.FindAllStringSubmatchIndex(js, -1) {
			for _, bad := range []string{"\xff", "\xed\xa0\x80", `\ud800`, `\udfff`} {
				body := js[:m[3]] + bad + js[m[3]:]
				field := memberName.FindAllStringSubmatch(js[:m[2]], -1)
				name := field[len(field)-1][1]
				t.Run(kind+"/"+name+"/"+strings.Trim(jsonQuote(bad), `"`), func(t *testing.T) {
					err := decodeKind(kind, body)
					if err == nil || !strings.Contains(err.Error(), "is not valid UTF-8") || !strings.Contains(err.Error(), name) {
						t.Fatalf("err = %v, want refused as not valid UTF-8, naming %q", err, name)
					}
				})
			}
		}
	}
}

func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestDecodeRequestEmbedded: the device API's answer embeds AnswerRequest
// (which embeds Header); its promoted fields decode, exact-case, and its
// own field too, and the answer it embeds is checked as one.
func TestDecodeRequestEmbedded(t *testing.T) {
	type deviceAnswer struct {
		AnswerRequest
		Confirm string `json:"confirm,omitempty"`
	}
	decode := func(body string, d *deviceAnswer) error {
		if err := ReadRequest(strings.NewReader(body), -1, WriteCap, d); err != nil {
			return err
		}
		return writes[0].Check(&d.AnswerRequest)
	}
	var d deviceAnswer
	body := `{"requestId":"r","conversation":"c","question":"q","revision":2,"optionIds":["yes"],"always":true,"confirm":"tok"}`
	if err := decode(body, &d); err != nil {
		t.Fatal(err)
	}
	if d.RequestID != "r" || d.Revision != 2 || !d.Always || d.Confirm != "tok" {
		t.Fatalf("decoded %+v", d)
	}
	for _, bad := range []string{
		`{"requestId":"r","conversation":"c","question":"q","revision":2,"optionIds":["yes"],"Confirm":"tok"}`,
		`{"requestId":"r","conversation":"c","question":"q","revision":2,"optionIds":["yes"],"Always":true}`,
		`{"requestId":"r","conversation":"c","question":"q","revision":2,"optionIds":["no"],"optionIds":["yes"]}`,
		`{"requestId":"r","conversation":"c","question":"q","revision":2,"optionIds":["no"],"always":true}`,
		`{"requestId":"r","conversation":"c","question":"q","revision":2,"optionIds":["yes"],"Header":{"requestId":"s"}}`,
	} {
		if err := decode(bad, new(deviceAnswer)); err == nil {
			t.Errorf("decode(%s) accepted it", bad)
		}
	}
}

// TestDecodeReplyStrict: replies to writes, asks and grants reads are
// closed, exact-case and valid UTF-8.
func TestDecodeReplyStrict(t *testing.T) {
	for _, body := range []string{
		`{"question":"q","conversation":"c","Status":"answered"}`,
		`{"question":"q","conversation":"c","status":"pending","status":"answered"}`,
		"{\"question\":\"q\",\"conversation\":\"c\",\"status\":\"answered\",\"text\":\"\xff\"}",
		`{"question":"q","conversation":"c","status":"answered","optionIds":["y\ud800"]}`,
	} {
		var r AskReply
		if err := DecodeReply(strings.NewReader(body), -1, &r); err == nil {
			t.Errorf("DecodeReply(%q) = %+v, want refused", body, r)
		}
	}
}

package fakemodel

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// post sends body to the server's path and returns the response's body.
func post(t *testing.T, s *Server, path, body string) (string, string) {
	t.Helper()
	resp, err := http.Post(s.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s: %s", path, resp.Status, b)
	}
	return resp.Header.Get("Content-Type"), string(b)
}

// events reads an SSE stream into its events' names and data.
func events(t *testing.T, stream string) (names []string, data []map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(stream))
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			names = append(names, n)
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(d), &m); err != nil {
				t.Fatalf("data line %q: %v", d, err)
			}
			data = append(data, m)
		}
	}
	return names, data
}

func TestScript_ToolCallThenTextPerDialect(t *testing.T) {
	cases := []struct {
		name, path, tools string
		stream            bool
		wantCall          []string // substrings of the first reply
		wantText          []string // substrings of the second
	}{
		{"anthropic stream", "/v1/messages?beta=true", `"tools":[{"name":"Bash"}],"stream":true`, true,
			[]string{"event: message_start", `"type":"tool_use"`, `"name":"Bash"`, `"partial_json":"{\"command\":\"echo hi\"}"`, `"stop_reason":"tool_use"`, "event: message_stop"},
			[]string{`"text_delta"`, `"text":"all done"`, `"stop_reason":"end_turn"`}},
		{"anthropic json", "/v1/messages", `"tools":[{"name":"Bash"}]`, false,
			[]string{`"type":"tool_use"`, `"input":{"command":"echo hi"}`, `"stop_reason":"tool_use"`},
			[]string{`"text":"all done"`}},
		{"openai responses", "/v1/responses", `"tools":[{"type":"function","name":"shell"}],"stream":true`, true,
			[]string{"event: response.created", "event: response.output_item.done", `"type":"function_call"`, `"arguments":"{\"command\":\"echo hi\"}"`, "event: response.completed"},
			[]string{`"type":"output_text"`, `"text":"all done"`, "event: response.completed"}},
		{"gemini stream", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", `"tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}]`, true,
			[]string{`"functionCall":{"args":{"command":"echo hi"}`, `"finishReason":"STOP"`},
			[]string{`"text":"all done"`}},
		{"gemini json", "/v1beta/models/gemini-2.5-pro:generateContent", `"tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}]`, false,
			[]string{`"functionCall"`},
			[]string{`"text":"all done"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := Start([]Turn{ToolCall("Bash", map[string]any{"command": "echo hi"}), Say("all done")})
			defer s.Close()
			body := `{"model":"m",` + tc.tools + `}`
			ct, first := post(t, s, tc.path, body)
			if tc.stream != strings.HasPrefix(ct, "text/event-stream") {
				t.Errorf("content type %q, want a stream: %v", ct, tc.stream)
			}
			for _, w := range tc.wantCall {
				if !strings.Contains(first, w) {
					t.Errorf("first reply lacks %s:\n%s", w, first)
				}
			}
			_, second := post(t, s, tc.path, body)
			for _, w := range tc.wantText {
				if !strings.Contains(second, w) {
					t.Errorf("second reply lacks %s:\n%s", w, second)
				}
			}
			_, third := post(t, s, tc.path, body)
			if !strings.Contains(third, `"done"`) {
				t.Errorf("after the script, the reply is not the done text:\n%s", third)
			}
			if got := s.TurnsTaken(); got != 2 {
				t.Errorf("turns taken %d, want 2", got)
			}
			reqs := s.Requests()
			if len(reqs) != 3 || reqs[0].Turn != 0 || reqs[1].Turn != 1 || reqs[2].Turn != -1 {
				t.Errorf("requests' turns: %+v", reqs)
			}
		})
	}
}

func TestAnthropicStream_EventsInOrder(t *testing.T) {
	s := Start([]Turn{ToolCall("Bash", map[string]any{"command": "ls"})})
	defer s.Close()
	_, stream := post(t, s, "/v1/messages", `{"model":"m","stream":true,"tools":[{"name":"Bash"}]}`)
	names, data := events(t, stream)
	want := []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("events %v, want %v", names, want)
	}
	for i, d := range data {
		if d["type"] != names[i] {
			t.Errorf("event %s carries type %v", names[i], d["type"])
		}
	}
	block := data[1]["content_block"].(map[string]any)
	if block["id"] != "toolu_fake0" {
		t.Errorf("tool_use id %v, want toolu_fake0 (from the request's number)", block["id"])
	}
}

func TestSideRequests_TakeNoTurn(t *testing.T) {
	s := Start([]Turn{Say("scripted")}, WithDone("side reply"))
	defer s.Close()
	// A request without tools (a title, a quota probe) and a token count.
	_, side := post(t, s, "/v1/messages", `{"model":"haiku","messages":[]}`)
	if !strings.Contains(side, "side reply") {
		t.Errorf("side request's reply: %s", side)
	}
	_, count := post(t, s, "/v1/messages/count_tokens", `{"model":"m"}`)
	if !strings.Contains(count, "input_tokens") {
		t.Errorf("count_tokens reply: %s", count)
	}
	_, loop := post(t, s, "/v1/messages", `{"model":"m","tools":[{"name":"Bash"}]}`)
	if !strings.Contains(loop, "scripted") {
		t.Errorf("the agent loop's first request did not get the script's turn: %s", loop)
	}
	if n := len(s.TurnRequests()); n != 1 {
		t.Errorf("TurnRequests has %d, want 1", n)
	}
}

func TestUnknownAndConnect_RecordedAndRefused(t *testing.T) {
	s := Start(nil)
	defer s.Close()
	resp, err := http.Get(s.URL + "/v1/unknown")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown path: %s", resp.Status)
	}
	// As an HTTPS proxy: the CONNECT is recorded with its host and refused.
	req, err := http.NewRequest(http.MethodConnect, s.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "statsig.example:443"
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("CONNECT: %s", resp.Status)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[1].Method != http.MethodConnect || reqs[1].Path != "statsig.example:443" || reqs[1].Dialect != Other {
		t.Errorf("recorded: %+v", reqs)
	}
}

func TestToolResults_PerDialect(t *testing.T) {
	cases := []struct {
		name, path, body string
		want             []ToolResult
	}{
		{"anthropic string and blocks", "/v1/messages", `{"messages":[
			{"role":"user","content":"hi"},
			{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"denied: because","is_error":true},
				{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}]}`,
			[]ToolResult{{ID: "toolu_1", Content: "denied: because", IsError: true}, {ID: "toolu_2", Content: "a\nb"}}},
		{"openai", "/v1/responses", `{"input":[{"type":"message","role":"user","content":[]},
			{"type":"function_call","call_id":"call_1","name":"shell","arguments":"{}"},
			{"type":"function_call_output","call_id":"call_1","output":"exit 0"},
			{"type":"custom_tool_call_output","call_id":"call_2","output":[{"type":"input_text","text":"x"}]}]}`,
			[]ToolResult{{ID: "call_1", Content: "exit 0"}, {ID: "call_2", Content: "x"}}},
		{"gemini", "/v1beta/models/m:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"hi"}]},
			{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"error":"blocked"}}},
				{"functionResponse":{"id":"fc-1","name":"x","response":{"output":"ok"}}}]}]}`,
			[]ToolResult{{ID: "run_shell_command", Content: `{"error":"blocked"}`}, {ID: "fc-1", Content: `{"output":"ok"}`}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := Start(nil)
			defer s.Close()
			post(t, s, tc.path, tc.body)
			got := s.Requests()[0].ToolResults()
			if len(got) != len(tc.want) {
				t.Fatalf("results %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("result %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
			if _, ok := s.Requests()[0].ToolResult(tc.want[0].ID); !ok {
				t.Errorf("ToolResult(%q) not found", tc.want[0].ID)
			}
		})
	}
}

func TestWait_ReturnsWhenTheRequestArrives(t *testing.T) {
	s := Start([]Turn{Say("one")})
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan Request, 1)
	go func() {
		r, err := s.Wait(ctx, func(r Request) bool { return r.Dialect == Gemini })
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	post(t, s, "/v1/messages", `{"model":"m"}`)
	post(t, s, "/v1beta/models/gemini-x:generateContent", `{"contents":[]}`)
	r := <-got
	if r.Model != "gemini-x" || r.Seq != 1 {
		t.Errorf("waited for %+v", r)
	}
	short, cancelShort := context.WithCancel(context.Background())
	cancelShort()
	if _, err := s.Wait(short, func(Request) bool { return false }); err == nil {
		t.Error("Wait with an ended context returned no error")
	}
}

// TestGeminiSchemaSideRequest: Gemini CLI's router asks for JSON of a
// schema; the reply is JSON of its shape, not the done text.
func TestGeminiSchemaSideRequest(t *testing.T) {
	s := Start(nil)
	defer s.Close()
	_, reply := post(t, s, "/v1beta/models/gemini-3.5-flash-lite:generateContent", `{"generationConfig":{
		"responseMimeType":"application/json","responseJsonSchema":{"type":"OBJECT","properties":{
		"complexity_reasoning":{"type":"STRING"},"complexity_score":{"type":"INTEGER"},
		"choice":{"type":"STRING","enum":["flash","pro"]},"tags":{"type":"ARRAY","items":{"type":"STRING"}}}}}}`)
	var resp struct {
		Candidates []struct {
			Content struct {
				Parts []struct {
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"content"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal([]byte(reply), &resp); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(resp.Candidates[0].Content.Parts[0].Text), &got); err != nil {
		t.Fatalf("the reply's text is not JSON: %v: %s", err, reply)
	}
	want := map[string]any{"complexity_reasoning": "fake", "complexity_score": 1.0, "choice": "flash", "tags": []any{"fake"}}
	for k, v := range want {
		if gb, _ := json.Marshal(got[k]); string(gb) != mustJSON(t, v) {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

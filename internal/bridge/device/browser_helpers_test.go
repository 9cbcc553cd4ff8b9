package device

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/view"
	"github.com/collie-linux/collie/internal/protocol/wire"
	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// chromiumPath finds Debian's chromium: COLLIE_TEST_CHROMIUM when set, the
// browser binary itself (/usr/lib/chromium/chromium, skipping the
// /usr/bin/chromium wrapper script and its /etc/chromium.d flags), or a
// chromium on PATH.
func chromiumPath() string {
	if p := os.Getenv("COLLIE_TEST_CHROMIUM"); p != "" {
		return p
	}
	if st, err := os.Stat("/usr/lib/chromium/chromium"); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return "/usr/lib/chromium/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// needChromium returns the browser to test with. Without one the test
// skips and says why, except in CI (CI=true), where it must run: .ci/deps
// installs chromium there.
func needChromium(t *testing.T) string {
	t.Helper()
	if testing.Short() && !testenv.InCI() {
		t.Skip("-short: the real-browser test of the web app starts chromium; run without -short")
	}
	p := chromiumPath()
	if p == "" {
		testenv.Unavailable(t, "chromium is not installed, so the real-browser test of the web app cannot run; install it with: apt-get install chromium (.ci/deps does, as root), or set COLLIE_TEST_CHROMIUM")
	}
	return p
}

// forwarded is one write the device API passed on to an agent.
type forwarded struct {
	agent, path string
	req         wire.WriteRequest
}

// browserBackend is the bridge as the device API sees it, for the browser
// test: a view that the test changes, and every write that got through.
type browserBackend struct {
	mu     sync.Mutex
	view   []view.Agent
	writes []forwarded
}

func (b *browserBackend) View() []view.Agent {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.view
}

func (b *browserBackend) Forward(_ context.Context, agent, path string, req wire.WriteRequest) (*wire.WriteReply, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if agent != "demo" {
		return nil, ErrUnknownAgent
	}
	b.writes = append(b.writes, forwarded{agent, path, req})
	return &wire.WriteReply{RequestID: "ok"}, nil
}

func (b *browserBackend) SetWatching(bool) {}

func (b *browserBackend) setView(v []view.Agent) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.view = v
}

func (b *browserBackend) forwards() []forwarded {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.writes)
}

// loadGuard bounds a browser test's wait for what it waits on (an
// element, an event, a state the page reaches): no budget, only a guard
// against a hang, so long that a loaded machine (a dozen test binaries and
// a user manager on two cores) never reaches it while the awaited thing is
// still coming. A time a test holds the page to is a budget, named as one,
// and such tests run alone (ALONE in the Makefile).
const loadGuard = 2 * time.Minute

// waitForwards waits until n writes reached the agent.
func (b *browserBackend) waitForwards(t *testing.T, n int) []forwarded {
	t.Helper()
	deadline := time.Now().Add(loadGuard)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for ; ; <-tick.C {
		w := b.forwards()
		if len(w) >= n || time.Now().After(deadline) {
			if len(w) != n {
				t.Fatalf("%d writes reached the agent, want %d: %+v", len(w), n, w)
			}
			return w
		}
	}
}

// hostileMarkdown must show as its characters: no element is made of it
// and nothing runs (X6).
const hostileMarkdown = "# Plan\n\n- **build** the `site`\n- read [the docs](https://example.org/docs) or [this](javascript:alert(1))\n\n" +
	"<img src=x onerror=alert(1)> and <script>alert(2)</script>"

// structuredMarkdown shows what the renderer draws; the tag in the fence
// stays characters too.
const structuredMarkdown = "1. first\n2. second\n   - nested *item*\n\n> quoted *note*\n\n```\n<b>not bold</b>\n```\n\n" +
	"keep snake_case_name, __strong__ and ***both***; see <https://example.org/notes>"

// agentSnapshot is what the demo agent sends, hostile bits included; the
// bridge's decoder cleans it (X1–X5) as it would in the daemon.
func agentSnapshot(t *testing.T, extra ...string) *wire.Snapshot {
	t.Helper()
	questions := []string{
		`{"id":"q-yes","kind":"yes-no","title":"Deploy to production?","rationale":"All 212 tests pass.\nThe last deploy was yesterday.","revision":3,"toolCall":"tc-1"}`,
		`{"id":"q-choice","kind":"choice","title":"Which region first?","revision":1,"options":[{"id":"eu","label":"Europe (Frankfurt)"},{"id":"us","label":"United States (Virginia)"},{"id":"blank","label":"\u200b"}]}`,
		`{"id":"q-always","kind":"yes-no","title":"Run git push origin main?","revision":2,"toolCall":"tc-2","allowAlways":true,"alwaysScope":{"tool":"Bash","commandPrefix":"git push","durationSeconds":3600,"text":"Bash: git push …, for an hour"}}`,
	}
	questions = append(questions, extra...)
	raw := `{"spaces":[{"id":"s1","title":"Website","tabs":[{"id":"t1","title":"Deploys","conversations":[
	{"id":"c1","title":"Ship the new site","items":[
		{"id":"i1","kind":"text","role":"user","text":"Please ship the new site today."},
		{"id":"i2","kind":"text","role":"agent","text":"Invoice_\u202egnp.exe\u202c ready\u200b\u2066 now"},
		{"id":"i3","kind":"markdown","text":` + jsonString(hostileMarkdown) + `},
		{"id":"i4","kind":"code","language":"sh","text":"make deploy ENV=prod\n"},
		{"id":"i5","kind":"link","text":"Build report","url":"https://example.org/report/42"},
		{"id":"i6","kind":"tool-call","tool":{"name":"Bash","status":"done","summary":"go test ./...","output":"ok  \tgithub.com/collie-linux/site\t0.42s\n"}}
	],"questions":[` + strings.Join(questions, ",") + `]},
	{"id":"c2","title":"Release notes","items":[{"id":"n1","kind":"text","role":"agent","text":"I need two things before I write the notes."},
		{"id":"n2","kind":"markdown","text":` + jsonString(structuredMarkdown) + `}],"questions":[
		{"id":"q-line","kind":"line","title":"Name of this release?","revision":1},
		{"id":"q-form","kind":"form","title":"Who signs it off?","revision":1,"fields":[{"id":"name","label":"Name"},{"id":"team","label":"Team"}]},
		{"id":"q-short","kind":"yes-no","title":"Publish\u200b now?","revision":1}
	]},
	{"id":"c3","title":"Old chat","closed":true,"items":[{"id":"o1","kind":"text","role":"agent","text":"Done."}]}
	]}]}],
	"belt":[{"id":"tests","label":"Run tests"},{"id":"logs","label":"Tail logs"}],
	"starters":[{"id":"deploy","label":"New deploy"}]}`
	s, _, err := wire.ParseSnapshot([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	// What the page must refuse on its own, should the bridge ever pass it
	// on: a link item that is not https (X6).
	c := &s.Spaces[0].Tabs[0].Conversations[0]
	c.Items = append(c.Items,
		wire.Item{ID: "i7", Kind: wire.KindLink, Text: "click me", URL: "javascript:alert(3)"},
		wire.Item{ID: "i8", Kind: wire.KindLink, Text: "plain http", URL: "http://example.org/"})
	return s
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func browserView(s *wire.Snapshot) []view.Agent {
	return []view.Agent{
		{AgentStatus: view.AgentStatus{Name: "demo", Agent: "Site deployer", Transport: "socket", Reachable: true}, Snapshot: s},
		{AgentStatus: view.AgentStatus{Name: "backup", Transport: "socket", Reason: "socket-not-private: /run/user/1000/desk/backup.sock is a symlink"}},
	}
}

// httpDo makes a request as a device outside the browser would.
func httpDo(t *testing.T, method, url, cred, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if cred != "" {
		req.Header.Set("Authorization", "Bearer "+cred)
	}
	if method == "POST" {
		req.Header.Set(WriteHeader, "1")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

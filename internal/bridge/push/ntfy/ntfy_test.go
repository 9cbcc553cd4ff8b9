package ntfy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collie-linux/collie/internal/bridge/push"
	"github.com/collie-linux/collie/internal/testkit/memnet"
)

const (
	topic = "collie-d9f3a1b2c4e5f607"
	token = "tk_secretsecretsecretsecret0123"
)

// recorded is one request the test server received.
type recorded struct {
	method, path string
	header       http.Header
	body         []byte
}

// recorder is a local ntfy double: it records every request and answers
// with what the test sets.
type recorder struct {
	mu     sync.Mutex
	reqs   []recorded
	answer func(w http.ResponseWriter)
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.reqs = append(r.reqs, recorded{req.Method, req.URL.Path, req.Header.Clone(), body})
	answer := r.answer
	r.mu.Unlock()
	if answer == nil {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"hE2jd8Q","time":1700000000,"event":"message","topic":"`+topic+`"}`)
		return
	}
	answer(w)
}

func (r *recorder) last(t *testing.T) recorded {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reqs) == 0 {
		t.Fatal("the server got no request")
	}
	return r.reqs[len(r.reqs)-1]
}

func question() push.Message {
	return push.Message{Agent: "deploy", Conversation: "release 1.2", Title: "deploy: a question is waiting", Body: "In release 1.2. Open Collie to answer.",
		URL: "https://collie.example.com/", Key: "deploy\x00call-1", Kind: push.KindQuestion}
}

func newProvider(t *testing.T, o Options) *Provider {
	t.Helper()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// noSecret fails when s holds the token or the topic.
func noSecret(t *testing.T, what, s string) {
	t.Helper()
	if strings.Contains(s, token) || strings.Contains(s, topic) {
		t.Fatalf("%s holds a secret: %q", what, s)
	}
}

// TestPublish_D4_D6: one push is one POST of ntfy's JSON to the server's
// root, with the bearer token, the title and body as given, the click URL
// and a single action that only opens it (D6).
func TestPublish_D4_D6(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	for _, tc := range []struct {
		name, token, priority string
		wantAuth              string
		wantPrio              int
	}{
		{"token_and_priority", token, "high", "Bearer " + token, 4},
		{"no_token_default_priority", "", "", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProvider(t, Options{Server: srv.URL, Topic: topic, Token: tc.token, Priority: tc.priority})
			answer, err := p.SendReport(context.Background(), question())
			if err != nil {
				t.Fatal(err)
			}
			if want := "ntfy at " + srv.URL + " accepted it (message hE2jd8Q)"; answer != want {
				t.Errorf("answer %q, want %q", answer, want)
			}
			r := rec.last(t)
			if r.method != http.MethodPost || r.path != "/" {
				t.Errorf("%s %s, want POST /", r.method, r.path)
			}
			if got := r.header.Get("Authorization"); got != tc.wantAuth {
				t.Errorf("Authorization %q, want %q", got, tc.wantAuth)
			}
			if got := r.header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type %q", got)
			}
			var body map[string]any
			if err := json.Unmarshal(r.body, &body); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{
				"topic": topic, "title": "deploy: a question is waiting", "message": "In release 1.2. Open Collie to answer.",
				"click":   "https://collie.example.com/",
				"actions": []any{map[string]any{"action": "view", "label": "Open Collie", "url": "https://collie.example.com/", "clear": true}},
			}
			if tc.wantPrio != 0 {
				want["priority"] = float64(tc.wantPrio)
			}
			if got, _ := json.Marshal(body); string(got) != mustJSON(want) {
				t.Errorf("body %s\nwant %s", got, mustJSON(want))
			}
		})
	}
	t.Run("D6_no_action_but_view", func(t *testing.T) {
		p := newProvider(t, Options{Server: srv.URL, Topic: topic})
		for _, k := range []push.Kind{push.KindQuestion, push.KindSummary, push.KindTest} {
			m := question()
			m.Kind = k
			b, _ := p.Body(m)
			for _, bad := range []string{`"http"`, `"broadcast"`, `"method"`, `"body"`} {
				if strings.Contains(string(b), bad) {
					t.Fatalf("kind %d: %s carries %s", k, b, bad)
				}
			}
		}
		m := question()
		m.URL = ""
		if b, _ := p.Body(m); strings.Contains(string(b), "actions") || strings.Contains(string(b), "click") {
			t.Fatalf("without a URL: %s", b)
		}
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestPublishFailures: the server down, slow, answering 429, 5xx, 4xx or
// a redirect: each an error that names the server's origin only (never
// the topic or the token), permanent where a retry cannot help, with the
// server's Retry-After where it sent one.
func TestPublishFailures(t *testing.T) {
	for _, tc := range []struct {
		name      string
		answer    func(w http.ResponseWriter)
		want      string
		permanent bool
		after     time.Duration
	}{
		{"429_retry_after", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "30")
			http.Error(w, `{"code":42901,"error":"limit reached `+topic+`"}`, http.StatusTooManyRequests)
		}, "answered 429 Too Many Requests", false, 30 * time.Second},
		{"429_bare", func(w http.ResponseWriter) { w.WriteHeader(http.StatusTooManyRequests) }, "answered 429 Too Many Requests", false, 0},
		{"500", func(w http.ResponseWriter) { w.WriteHeader(http.StatusInternalServerError) }, "answered 500 Internal Server Error", false, 0},
		{"502", func(w http.ResponseWriter) { w.WriteHeader(http.StatusBadGateway) }, "answered 502 Bad Gateway", false, 0},
		{"503_retry_after", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(http.StatusServiceUnavailable)
		}, "answered 503 Service Unavailable", false, 5 * time.Second},
		{"503_retry_after_date", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", time.Now().Add(91*time.Second).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusServiceUnavailable)
		}, "answered 503 Service Unavailable", false, 90 * time.Second},
		{"401", func(w http.ResponseWriter) { w.WriteHeader(http.StatusUnauthorized) }, "needs an access token", true, 0},
		{"403", func(w http.ResponseWriter) { w.WriteHeader(http.StatusForbidden) }, "needs an access token", true, 0},
		{"400", func(w http.ResponseWriter) { w.WriteHeader(http.StatusBadRequest) }, "answered 400 Bad Request", true, 0},
		{"redirect_not_followed", func(w http.ResponseWriter) {
			w.Header().Set("Location", "https://elsewhere.example/"+topic)
			w.WriteHeader(http.StatusTemporaryRedirect)
		}, "a redirect, which Collie never follows", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{answer: tc.answer}
			srv := httptest.NewServer(rec)
			defer srv.Close()
			p := newProvider(t, Options{Server: srv.URL, Topic: topic, Token: token})
			_, err := p.SendReport(context.Background(), question())
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), srv.URL) {
				t.Fatalf("err %v, want it to say %q and name %s", err, tc.want, srv.URL)
			}
			noSecret(t, "the error", err.Error())
			if push.IsPermanent(err) != tc.permanent {
				t.Errorf("permanent: %v, want %v", push.IsPermanent(err), tc.permanent)
			}
			var ra *push.RetryAfterError
			// A date has whole seconds: read a moment later, 91 s is 90 and some.
			if got := errors.As(err, &ra); got != (tc.after != 0) || (got && ra.After.Truncate(time.Second) != tc.after) {
				t.Errorf("retry after: %v %+v, want %v", got, ra, tc.after)
			}
			if n := len(rec.reqs); n != 1 {
				t.Errorf("%d requests, want 1 (the provider does not retry; the dispatcher does)", n)
			}
		})
	}
	t.Run("down", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		p := newProvider(t, Options{Server: "http://" + addr, Topic: topic, Token: token})
		_, err = p.SendReport(context.Background(), question())
		if err == nil || !strings.Contains(err.Error(), "cannot be reached") || push.IsPermanent(err) {
			t.Fatalf("err %v, want cannot be reached, to retry", err)
		}
		noSecret(t, "the error", err.Error())
	})
	t.Run("slow", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := memnet.New()
			release := make(chan struct{})
			hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				<-release // an answer that never comes in time
			})}
			go hs.Serve(l)
			defer func() { close(release); hs.Close() }()
			hc := &http.Client{Transport: &http.Transport{DialContext: l.DialContext}}
			p := newProvider(t, Options{Server: "http://127.0.0.1:1", Topic: topic, Token: token, Client: hc})
			start := time.Now()
			_, err := p.SendReport(context.Background(), question())
			if took := time.Since(start); took != Timeout {
				t.Errorf("gave up after %v, want %v", took, Timeout)
			}
			if err == nil || !strings.Contains(err.Error(), "no answer in time") {
				t.Fatalf("err %v, want no answer in time", err)
			}
			noSecret(t, "the error", err.Error())
		})
	})
}

// TestOptions: every setting checked, with a sentence that says what to
// write and never quotes the token or topic.
func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"no_server", Options{Topic: topic}, "ntfy has no server"},
		{"plain_http_elsewhere", Options{Server: "http://ntfy.example.com", Topic: topic}, "plain http:// is only for an ntfy server on this machine"},
		{"ftp", Options{Server: "ftp://ntfy.example.com", Topic: topic}, "not https://"},
		{"user_in_url", Options{Server: "https://me:" + token + "@ntfy.sh", Topic: topic}, "has a user, password"},
		{"query", Options{Server: "https://ntfy.sh/?auth=" + token, Topic: topic}, "query"},
		{"topic_in_url_path_is_fine_but_no_topic", Options{Server: "https://ntfy.sh"}, "the ntfy topic must be"},
		{"bad_topic", Options{Server: "https://ntfy.sh", Topic: "a/b"}, "the ntfy topic must be"},
		{"long_topic", Options{Server: "https://ntfy.sh", Topic: strings.Repeat("a", 65)}, "the ntfy topic must be"},
		{"token_space", Options{Server: "https://ntfy.sh", Topic: topic, Token: "tk_ a"}, "the ntfy token has a space"},
		{"priority", Options{Server: "https://ntfy.sh", Topic: topic, Priority: "loud"}, `priority "loud" is not one of`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			noSecret(t, "the error", err.Error())
		})
	}
	for _, ok := range []string{"https://ntfy.sh", "https://example.com/ntfy/", "http://127.0.0.1:8090", "http://[::1]:80", "http://localhost:2586"} {
		if _, err := New(Options{Server: ok, Topic: topic}); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

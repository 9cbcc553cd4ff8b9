package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
)

// ntfyDouble is the script command `ntfy`: it starts a local ntfy server
// double that appends each request (its Authorization header and body) to
// $WORK/ntfy.log and answers as ntfy does, writes a 0600 token file, and
// writes config.toml with [push.ntfy] pointing at the double (issue 12).
func ntfyDouble(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: ntfy")
	}
	work := ts.Getenv("WORK")
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		n++
		f, err := os.OpenFile(filepath.Join(work, "ntfy.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintf(f, "%s %s Authorization: %s\n%s", r.Method, r.URL.Path, r.Header.Get("Authorization"), body)
			f.Close()
		}
		fmt.Fprintf(w, `{"id":"m%d","event":"message"}`, n)
	}))
	ts.Defer(srv.Close)
	token := filepath.Join(work, "ntfy-token")
	ts.Check(os.WriteFile(token, []byte("tk_scriptsecret0123456789abcdef\n"), 0o600))
	cfg := fmt.Sprintf("[devices]\nlisten = \"127.0.0.1:0\"\n\n[push]\ndesktop = false\n\n[push.ntfy]\nserver = %q\ntopic = \"collie-script-topic\"\ntoken_file = %q\npriority = \"high\"\n", srv.URL, token)
	dir := filepath.Join(ts.Getenv("XDG_CONFIG_HOME"), "collie")
	ts.Check(os.MkdirAll(dir, 0o700))
	ts.Check(os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600))
}

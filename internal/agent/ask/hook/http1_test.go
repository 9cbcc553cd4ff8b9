package hook

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// replySeeds are replies as agents send them (net/http's server: a
// Content-Length, or chunks past its buffer) and broken ones.
var replySeeds = []string{
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{\"status\":\"pending\"}",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer: x\r\n\r\n",
	"HTTP/1.1 403 Forbidden\r\nContent-Length: 2\r\n\r\n{}",
	"HTTP/1.0 200 OK\r\n\r\nuntil the end",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
	"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
	"HTTP/1.1 2000 OK\r\n\r\n",
	"SSH-2.0-OpenSSH\r\n",
	"HTTP/1.1 200 OK\r\nbroken header\r\n\r\n",
	"HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
}

// readAll reads a reply as the hook does: its status and its body.
func readAll(data []byte) (status int, body []byte, err error) {
	rep, err := readReply(bufio.NewReaderSize(bytes.NewReader(data), 4<<10), "POST")
	if err != nil {
		return 0, nil, err
	}
	body, err = io.ReadAll(io.LimitReader(rep.Body, 1<<20))
	return rep.Status, body, err
}

// FuzzReadReply: the hook's reader of an agent's reply never fails in a
// way of its own on what net/http's client reads: when both read a reply
// whole, they read the same status and the same body.
func FuzzReadReply(f *testing.F) {
	for _, s := range replySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		status, body, err := readAll(data)
		if err != nil {
			return
		}
		req, _ := http.NewRequest("POST", "http://agent/v1/ask", nil)
		resp, herr := http.ReadResponse(bufio.NewReader(bytes.NewReader(data)), req)
		if herr != nil || resp.StatusCode < 200 {
			return // a 1xx: net/http's transport reads the next reply, as the hook does
		}
		hbody, herr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if herr != nil {
			return
		}
		if resp.StatusCode != status || !bytes.Equal(hbody, body) {
			t.Fatalf("%q: the hook read %d %q, net/http %d %q", data, status, body, resp.StatusCode, hbody)
		}
	})
}

// TestReadReply: the replies the hook reads, and the ones it refuses.
func TestReadReply(t *testing.T) {
	tests := []struct {
		in     string
		status int
		body   string
		err    string
	}{
		{replySeeds[0], 200, `{"status":"pending"}`, ""},
		{replySeeds[1], 200, "hello world", ""},
		{replySeeds[3], 200, "until the end", ""},
		{replySeeds[4], 200, "x", ""},
		{replySeeds[5], 204, "", ""},
		{replySeeds[6], 0, "", "not one number"},
		{replySeeds[7], 0, "", "unexpected EOF"},
		{replySeeds[8], 0, "", "not a number"},
		{replySeeds[9], 0, "", "other than chunked"},
		{replySeeds[10], 0, "", "not HTTP/1.1"},
		{replySeeds[11], 0, "", "not HTTP/1.1"},
		{replySeeds[12], 0, "", "no name"},
		{replySeeds[13], 200, "ok", ""},
		{"HTTP/1.1 200 OK\r\n" + strings.Repeat("X-Big: "+strings.Repeat("a", 1000)+"\r\n", 20) + "\r\n", 0, "", "over 16384 bytes"},
	}
	for _, tc := range tests {
		status, body, err := readAll([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want an error saying %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || status != tc.status || string(body) != tc.body {
			t.Errorf("%q: %d %q %v, want %d %q", tc.in, status, body, err, tc.status, tc.body)
		}
	}
}

// Package hostiletest is a hostile durable agent for tests: on a private
// socket it answers each request with the raw bytes the test chooses (a
// status line, headers and a body no well-behaved agent would send), so
// the tests can check what Collie does with agent text (X1).
package hostiletest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"

	"github.com/collie-linux/collie/internal/linux/privsock"
)

// Pwn is what a hostile agent would like to reach a terminal or a page:
// an OSC sequence that retitles the terminal, a direction override and a
// tag character.
const Pwn = "\x1b]0;pwned\x07\u202e\U000E0041"

// Serve listens on a private socket at path (T5) until the test ends and
// answers each request with what reply returns for its URL path, written
// as it is.
func Serve(t testing.TB, path string, reply func(urlPath string) string) {
	t.Helper()
	l, err := privsock.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				io.WriteString(c, reply(req.URL.Path))
			}(c)
		}
	}()
}

// Reply is a raw HTTP/1.1 reply: status ("500 anything"), headers (each
// ending in CRLF; may be empty) and body, with its length, and the
// connection closed after it.
func Reply(status, headers, body string) string {
	return "HTTP/1.1 " + status + "\r\n" + headers + "Content-Length: " + strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n" + body
}

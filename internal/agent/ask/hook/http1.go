package hook

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// The hook speaks HTTP/1.1 to the agent's socket itself, one request per
// connection, rather than through net/http: the hook starts once per tool
// call, and net/http (with the TLS stack it links) would be most of what
// that start costs. What it reads of a reply is capped like net/http's
// client caps it for collie ask.

// maxHeaderBytes caps a reply's status line and headers.
const maxHeaderBytes = 16 << 10

// socketTransport is the agent's transport: each request dials the
// socket at its path anew (Dial: the walk, the listener's user).
type socketTransport string

func (path socketTransport) Do(ctx context.Context, method, route string, body []byte) (*Reply, error) {
	conn, err := Dial(ctx, string(path))
	if err != nil {
		return nil, err
	}
	// The context's end (its deadline, a signal) ends the exchange: it
	// sets the connection's deadline in the past, and what fails then
	// fails with the context's error.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	fail := func(err error) (*Reply, error) {
		stop()
		conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if _, err := conn.Write(request(method, route, body)); err != nil {
		return fail(err)
	}
	br := bufio.NewReaderSize(conn, 4<<10)
	rep, err := readReply(br, method)
	if err != nil {
		return fail(err)
	}
	rep.Body = &replyBody{r: rep.Body, conn: conn, stop: stop, ctx: ctx}
	return rep, nil
}

// request is the request's bytes: HTTP/1.1, the connection closed after
// the reply.
func request(method, route string, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: agent\r\n%s: 1\r\n", method, route, wire.VersionHeader)
	if body != nil {
		fmt.Fprintf(&b, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	b.WriteString("Connection: close\r\n\r\n")
	b.Write(body)
	return b.Bytes()
}

// replyBody is a reply's body; closing it closes the connection.
type replyBody struct {
	r    io.ReadCloser
	conn net.Conn
	stop func() bool
	ctx  context.Context
}

func (b *replyBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF && b.ctx.Err() != nil {
		err = b.ctx.Err()
	}
	return n, err
}

func (b *replyBody) Close() error {
	b.stop()
	return b.conn.Close()
}

// errReply is a reply that is not HTTP/1.x as the hook reads it.
var errReply = errors.New("the agent's reply is not HTTP/1.1")

// readReply reads a reply's status line and headers from br, and returns
// the reply with its body framed: by Content-Length, by chunks, or by the
// connection's end. An informational reply (1xx) before it is skipped.
func readReply(br *bufio.Reader, method string) (*Reply, error) {
	read := 0
	line := func() (string, error) {
		b, err := br.ReadSlice('\n')
		read += len(b)
		if errors.Is(err, bufio.ErrBufferFull) || read > maxHeaderBytes {
			return "", fmt.Errorf("%w: its headers are over %d bytes", errReply, maxHeaderBytes)
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
		return strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"), nil
	}
	for {
		status, err := line()
		if err != nil {
			return nil, err
		}
		proto, rest, _ := strings.Cut(status, " ")
		code, _, _ := strings.Cut(rest, " ")
		n, err := strconv.Atoi(code)
		if (proto != "HTTP/1.1" && proto != "HTTP/1.0") || len(code) != 3 || err != nil || n < 100 {
			return nil, errReply
		}
		length, chunked := int64(-1), false
		for {
			h, err := line()
			if err != nil {
				return nil, err
			}
			if h == "" {
				break
			}
			name, value, ok := strings.Cut(h, ":")
			if !ok || name == "" || strings.ContainsAny(name, " \t") {
				return nil, fmt.Errorf("%w: a header line has no name", errReply)
			}
			value = strings.TrimSpace(value)
			switch {
			case strings.EqualFold(name, "Content-Length"):
				l, err := strconv.ParseInt(value, 10, 64)
				if err != nil || l < 0 || value[0] == '+' || (length >= 0 && l != length) {
					return nil, fmt.Errorf("%w: its Content-Length is not one number", errReply)
				}
				length = l
			case strings.EqualFold(name, "Transfer-Encoding") && proto == "HTTP/1.1": // HTTP/1.0 has none
				if !strings.EqualFold(value, "chunked") || chunked {
					return nil, fmt.Errorf("%w: a transfer encoding other than chunked", errReply)
				}
				chunked = true
			}
		}
		if n < 200 && n != 101 {
			continue // 100 Continue and the like: the reply follows
		}
		if n == 101 {
			return nil, errReply
		}
		rep := &Reply{Status: n, Length: length}
		switch {
		case method == "HEAD" || n == 204 || n == 304:
			rep.Length, rep.Body = 0, io.NopCloser(strings.NewReader(""))
		case chunked:
			rep.Length, rep.Body = -1, io.NopCloser(&chunkReader{br: br})
		case length >= 0:
			rep.Body = io.NopCloser(&exactReader{r: br, n: length})
		default:
			rep.Body = io.NopCloser(br)
		}
		return rep, nil
	}
}

// exactReader reads n bytes, and an early end is io.ErrUnexpectedEOF.
type exactReader struct {
	r io.Reader
	n int64
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > e.n {
		p = p[:e.n]
	}
	n, err := e.r.Read(p)
	e.n -= int64(n)
	if err == io.EOF && e.n > 0 {
		err = io.ErrUnexpectedEOF
	}
	if err == io.EOF {
		err = nil
	}
	return n, err
}

// chunkReader reads a chunked body (RFC 9112, 7.1): sizes in hex, an
// extension after ";" ignored, trailers read and dropped.
type chunkReader struct {
	br   *bufio.Reader
	left int64 // of the current chunk
	done bool
	err  error
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if c.left == 0 && !c.done {
		if c.err = c.next(); c.err != nil {
			return 0, c.err
		}
	}
	if c.done {
		c.err = io.EOF
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.br.Read(p)
	c.left -= int64(n)
	if c.left == 0 && err == nil {
		err = c.crlf()
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	c.err = err
	return n, err
}

// next reads a chunk's size line; a size of 0 is the last chunk, whose
// trailers it reads to the empty line.
func (c *chunkReader) next() error {
	l, err := c.line()
	if err != nil {
		return err
	}
	size, _, _ := strings.Cut(l, ";")
	size = strings.TrimRight(size, " \t")
	n, err := strconv.ParseInt(size, 16, 64)
	if err != nil || n < 0 || size == "" || size[0] == '+' || size[0] == '-' {
		return fmt.Errorf("%w: a chunk's size is not a number", errReply)
	}
	if n > 0 {
		c.left = n
		return nil
	}
	for i := 0; ; i++ {
		t, err := c.line()
		if err != nil {
			return err
		}
		if t == "" {
			c.done = true
			return nil
		}
		if i > 64 {
			return fmt.Errorf("%w: too many trailers", errReply)
		}
	}
}

// crlf reads the line end after a chunk's data.
func (c *chunkReader) crlf() error {
	l, err := c.line()
	if err == nil && l != "" {
		err = fmt.Errorf("%w: a chunk is longer than its size", errReply)
	}
	return err
}

func (c *chunkReader) line() (string, error) {
	b, err := c.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return "", fmt.Errorf("%w: a chunk's line is too long", errReply)
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return "", err
	}
	return strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"), nil
}

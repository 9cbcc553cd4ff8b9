package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// One HTTP/1.1 exchange over a kept connection (a Unix socket, or TLS
// over TCP), without net/http's Transport: an agent held in a waiting
// read costs the bridge the goroutine that asked for it and the
// connection's descriptor, and nothing else while it waits. No goroutine
// reads or writes the connection beside the request, and no buffer is
// held while the agent holds the read: the request is written through a
// pooled buffer, the wait for the reply's first byte is a readiness wait
// on the descriptor (MSG_PEEK on the socket, under TLS too: no buffer),
// and the reply is read through a pooled buffer that goes back to the
// pool when its body is closed.

// maxHeaderBytes caps a reply's status line and headers (with the
// reader's buffer on top, as net/http counts): an agent cannot make the
// bridge hold an endless header.
const maxHeaderBytes = 16 << 10

// idleTimeout is how long a kept connection may sit unused before it is
// closed rather than reused: below the reference agent's 60 s, so the
// bridge never writes to a connection the agent is closing.
const idleTimeout = 50 * time.Second

var (
	readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}
	writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}
)

// errHeaderTooLong is the error of a reply whose headers pass maxHeaderBytes.
var errHeaderTooLong = fmt.Errorf("the agent's reply headers are longer than %d bytes", maxHeaderBytes)

// exchange sends req over c and reads the reply's status line and headers.
// The reply's body releases c when it is closed: c goes back to its pool
// when the body was read to its end, and is closed otherwise. ctx ending
// at any time before then interrupts the exchange and closes c.
func (c *keptConn) exchange(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	fail := func(err error) (*http.Response, error) {
		stop()
		c.Close()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	bw := writers.Get().(*bufio.Writer)
	bw.Reset(c.Conn)
	err := req.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	bw.Reset(nil)
	writers.Put(bw)
	if err != nil {
		return fail(fmt.Errorf("send the request: %w", err))
	}
	// Hold no buffer while the agent holds the read.
	if err := c.awaitReply(); err != nil {
		return fail(err)
	}
	lim := &headerLimit{r: c.Conn, n: maxHeaderBytes + 4<<10}
	br := readers.Get().(*bufio.Reader)
	br.Reset(lim)
	release := func() { br.Reset(nil); readers.Put(br) }
	var resp *http.Response
	for range 5 { // informational replies (100 Continue, 103) are skipped
		resp, err = http.ReadResponse(br, req)
		if err != nil || resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
	}
	if err == nil && resp.StatusCode < 200 {
		err = errors.New("the agent sent only informational replies")
	}
	if err != nil {
		release()
		if lim.n <= 0 {
			err = errHeaderTooLong
		}
		return fail(err)
	}
	lim.n = -1 // the body is limited by its reader
	resp.Body = &keptBody{rc: resp.Body, c: c, br: br, stop: stop, length: resp.ContentLength, reuse: !resp.Close && !req.Close}
	return resp, nil
}

// headerLimit lets n bytes through while n > 0, and any number once n is
// negative.
type headerLimit struct {
	r io.Reader
	n int
}

func (l *headerLimit) Read(p []byte) (int, error) {
	if l.n < 0 {
		return l.r.Read(p)
	}
	if l.n == 0 {
		return 0, errHeaderTooLong
	}
	if len(p) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= n
	return n, err
}

// keptBody is a reply's body over a kept connection. Closed after it was
// read to its end, it gives the connection back to its pool; closed before,
// it closes the connection (never reading the rest, which may be endless).
type keptBody struct {
	rc     io.ReadCloser
	c      *keptConn
	br     *bufio.Reader
	stop   func() bool // stops the context's watch of the connection
	length int64       // the reply's Content-Length; -1: unknown
	reuse  bool        // neither side asked to close the connection
	read   int64
	eof    bool
	once   sync.Once
}

func (b *keptBody) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	b.read += int64(n)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *keptBody) Close() error {
	b.once.Do(func() {
		done := b.eof || (b.length >= 0 && b.read == b.length)
		watched := b.stop() // false: ctx ended and its deadline is set on c
		if done && watched && b.reuse && b.br.Buffered() == 0 && b.c.drained() {
			b.br.Reset(nil)
			readers.Put(b.br)
			b.c.release()
			return
		}
		b.c.Close()
		b.br.Reset(nil)
		readers.Put(b.br)
	})
	return nil
}

package upstream

import (
	"bytes"
	"io"
	"net/http"
)

// NewHosted reads an agent the bridge hosts in its own process (an agent
// platform's agent session): the same protocol, limits and
// cleaning as an agent on a socket, carried by calling h, the agent's
// routes (durable.Server.Hosted), with no connection between them. A
// waiting read is held by h as by any agent.
func NewHosted(h http.Handler) Waiter {
	return &reader{
		base:    "http://hosted",
		timeout: SocketTimeout,
		hc: &http.Client{
			Transport:     handlerTransport{h},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// handlerTransport answers a request by calling a handler and keeping its
// whole reply, which the protocol caps (a snapshot at 4 MiB, X4).
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	in := req.Clone(req.Context())
	in.RequestURI = req.URL.RequestURI()
	if in.Body == nil {
		in.Body = http.NoBody
	}
	rec := &recorder{header: http.Header{}}
	t.h.ServeHTTP(rec, in)
	if req.Body != nil {
		req.Body.Close()
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return &http.Response{
		Status: http.StatusText(rec.status), StatusCode: rec.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: rec.header, Body: io.NopCloser(bytes.NewReader(rec.body.Bytes())),
		ContentLength: int64(rec.body.Len()), Request: req,
	}, nil
}

// recorder is the http.ResponseWriter of a hosted agent's reply.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}

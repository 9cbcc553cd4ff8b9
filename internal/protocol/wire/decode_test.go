package wire

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// limitedCounter is a body of n spaces (endless when n < 0) that counts
// what was read from it.
type limitedCounter struct {
	left int64 // bytes left; < 0 is endless
	read int64
}

func (r *limitedCounter) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	if r.left > 0 && int64(len(p)) > r.left {
		p = p[:r.left]
	}
	for i := range p {
		p[i] = ' '
	}
	r.read += int64(len(p))
	if r.left > 0 {
		r.left -= int64(len(p))
	}
	return len(p), nil
}

// TestReadCappedLength: a known Content-Length (X4) is read into
// one buffer of exactly that size, and a body that does not match it is
// refused, reading at most one byte past it; the cap holds whatever the
// length says.
func TestReadCappedLength(t *testing.T) {
	const limit = 1 << 20
	for _, tc := range []struct {
		name     string
		length   int64 // the Content-Length given
		body     int64 // the body's real length, < 0 endless
		wantErr  error
		maxRead  int64
		wantSize int
	}{
		{"X4_exact_length", 1000, 1000, nil, 1000, 1000},
		{"X4_exact_length_at_cap", limit, limit, nil, limit, limit},
		{"X4_empty_body_length_0", 0, 0, nil, 0, 0},
		{"X4_short_body_refused", 1000, 999, ErrLength, 999, 0},
		{"X4_empty_body_with_length_refused", 10, 0, ErrLength, 0, 0},
		{"X4_longer_body_refused", 1000, 5000, ErrLength, 1001, 0},
		{"X4_lying_length_endless_body_stops_after_it", 1000, -1, ErrLength, 1001, 0},
		{"X4_lying_length_at_cap_endless_body_never_past_cap", limit, -1, ErrLength, limit + 1, 0},
		{"X4_length_over_cap_reads_nothing", limit + 1, limit + 1, ErrTooLarge, 0, 0},
		{"X4_unknown_length_endless_body_stops_at_cap", -1, -1, ErrTooLarge, limit + 64<<10, 0},
		{"X4_unknown_length_within_cap", -1, 3000, nil, 3000, 3000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &limitedCounter{left: tc.body}
			data, err := ReadCapped(r, tc.length, limit)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if r.read > tc.maxRead {
				t.Fatalf("read %d bytes, want at most %d", r.read, tc.maxRead)
			}
			if err == nil && len(data) != tc.wantSize {
				t.Fatalf("got %d bytes, want %d", len(data), tc.wantSize)
			}
			if err != nil && !strings.Contains(err.Error(), "bytes") {
				t.Fatalf("error %q does not say how long the body was", err)
			}
		})
	}
}

// TestReadCappedOneBuffer: with a known length the body is read into one
// buffer of exactly that size: one allocation, no growing.
func TestReadCappedOneBuffer(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 3<<20)
	r := bytes.NewReader(body)
	var data []byte
	allocs := testing.AllocsPerRun(5, func() {
		r.Reset(body)
		var err error
		if data, err = ReadCapped(r, int64(len(body)), SnapshotCap); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 1 {
		t.Errorf("reading a 3 MiB body with its length took %v allocations, want 1", allocs)
	}
	if len(data) != len(body) || cap(data) > len(body)+1 {
		t.Errorf("buffer len %d cap %d, want %d and at most one byte more", len(data), cap(data), len(body))
	}
}

// TestDecodeSnapshotOverHTTP: a real HTTP reply whose Content-Length
// says more than the agent sends is refused as a short body, and one whose
// length is right is decoded (X4).
func TestDecodeSnapshotOverHTTP(t *testing.T) {
	const good = `{"spaces":[{"id":"s","title":"S\u202e","tabs":[]}]}`
	for _, tc := range []struct {
		name    string
		length  int
		wantErr error
	}{
		{"X4_length_right", len(good), nil},
		{"X4_length_says_more_than_sent", len(good) + 100, ErrLength},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				// Read the request head, then reply by hand so the
				// Content-Length can lie.
				buf := make([]byte, 4096)
				var req []byte
				for !bytes.Contains(req, []byte("\r\n\r\n")) {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					req = append(req, buf[:n]...)
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "+
					strconv.Itoa(tc.length)+"\r\nConnection: close\r\n\r\n"+good)
			}()
			resp, err := http.Get("http://" + ln.Addr().String() + SnapshotPath)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			s, _, err := DecodeSnapshot(resp.Body, resp.ContentLength)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err == nil && s.Spaces[0].Title != "S" {
				t.Fatalf("title %q was not cleaned", s.Spaces[0].Title)
			}
		})
	}
}

//go:build unix

// Command e2eclient is the end-to-end tests' stand-in for other programs
// on the machine: an attacker that tries every write on a durable agent's
// socket (run by the agent itself, double-forked away from it, moved into
// its cgroup, or unrelated), and the human's device that answers a
// question. It speaks the protocol directly over the socket and reports
// what it got as JSON.
//
//	e2eclient writes SOCKET OUT           try every read and write, report to OUT
//	e2eclient double-fork SOCKET OUT      start an orphan that does "writes" once re-parented
//	e2eclient wait-writes SOCKET OUT      print the pid, wait for a line on stdin, then "writes"
//	e2eclient tap SOCKET starter|action ID
//	e2eclient answer SOCKET SPEC          answer the open question SPEC names (JSON)
//	e2eclient reach SOCKET [SOCKET...]    connect to each socket: "PATH: ok" or "PATH: ERROR"
//
// SOCKET "-" means $COLLIE_AGENT_SOCKET, which the agent sets for the
// commands it runs.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: e2eclient MODE SOCKET ...")
		os.Exit(2)
	}
	mode, sock, rest := os.Args[1], os.Args[2], os.Args[3:]
	if mode == "reach" {
		os.Exit(reach(os.Args[2:]))
	}
	if sock == "-" { // run by the agent: it says where its socket is
		sock = os.Getenv("COLLIE_AGENT_SOCKET")
	}
	c := newClient(sock)
	var err error
	switch mode {
	case "writes":
		err = writes(c, rest[0])
	case "double-fork":
		cmd := exec.Command(os.Args[0], "orphan", sock, rest[0], strconv.Itoa(os.Getpid()))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		err = cmd.Start()
		if err == nil {
			fmt.Printf("started orphan %d\n", cmd.Process.Pid)
		}
	case "orphan":
		parent, _ := strconv.Atoi(rest[1])
		deadline := time.Now().Add(20 * time.Second)
		for os.Getppid() == parent && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		err = writes(c, rest[0])
	case "wait-writes":
		fmt.Printf("%d\n", os.Getpid())
		bufio.NewReader(os.Stdin).ReadString('\n')
		err = writes(c, rest[0])
	case "tap":
		err = tap(c, rest[0], rest[1])
	case "answer":
		err = answer(c, rest[0])
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2eclient:", err)
		os.Exit(1)
	}
}

// reach connects to each socket and says on stdout whether it could, as
// "PATH: ok" or "PATH: ERROR"; it exits 0 when every one could be reached.
func reach(socks []string) int {
	code := 0
	for _, s := range socks {
		c, err := net.DialTimeout("unix", s, 5*time.Second)
		if err != nil {
			fmt.Printf("%s: %v\n", s, err)
			code = 1
			continue
		}
		c.Close()
		fmt.Printf("%s: ok\n", s)
	}
	return code
}

type client struct{ hc *http.Client }

func newClient(sock string) *client {
	return &client{hc: &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}}
}

// Outcome is one request's result.
type Outcome struct {
	Status  int    `json:"status"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

func (c *client) do(method, path string, body any) (Outcome, []byte, error) {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, "http://agent"+path, r)
	req.Header.Set(wire.VersionHeader, "1")
	resp, err := c.hc.Do(req)
	if err != nil {
		return Outcome{}, nil, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, wire.SnapshotCap+1))
	o := Outcome{Status: resp.StatusCode}
	if code, msg, ok := wire.DecodeError(data); ok {
		o.Code, o.Message = code, msg
	}
	return o, data, nil
}

// Report is what "writes" finds out.
type Report struct {
	PID    int                `json:"pid"`
	PPID   int                `json:"ppid"`
	Cgroup string             `json:"cgroup"`
	Reads  map[string]Outcome `json:"reads"`
	Writes []Write            `json:"writes"`
}

// Write is one write tried.
type Write struct {
	Path string `json:"path"`
	Outcome
}

func snapshot(c *client) (*wire.Snapshot, Outcome, error) {
	o, data, err := c.do("GET", wire.SnapshotPath, nil)
	if err != nil || o.Status != 200 {
		return nil, o, err
	}
	s, _, err := wire.ParseSnapshot(data)
	return s, o, err
}

// writes reads, then tries every write of C2 in an order where each one
// is valid for an unrelated caller: answer the open question, send, tap
// the "slow" button and stop it, rename, close, reopen, tap a starter.
func writes(c *client, out string) error {
	rep := Report{PID: os.Getpid(), PPID: os.Getppid(), Reads: map[string]Outcome{}}
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if p, ok := strings.CutPrefix(line, "0::"); ok {
				rep.Cgroup = p
			}
		}
	}
	o, _, err := c.do("GET", wire.HelloPath, nil)
	if err != nil {
		return err
	}
	rep.Reads["hello"] = o
	s, o, err := snapshot(c)
	if err != nil {
		return err
	}
	rep.Reads["snapshot"] = o
	var q wire.Question
	for _, cv := range s.Spaces[0].Tabs[0].Conversations {
		if cv.ID == "main" && len(cv.Questions) > 0 {
			q = cv.Questions[0]
		}
	}
	id := func(s string) string { return fmt.Sprintf("%s-%d-%d", s, os.Getpid(), time.Now().UnixNano()) }
	steps := []struct {
		path string
		body any
	}{
		{wire.AnswerPath, wire.AnswerRequest{Header: wire.Header{RequestID: id("answer")}, Conversation: "main", Question: q.ID, Revision: q.Revision, OptionIDs: []string{wire.Yes}}},
		{wire.SendPath, wire.SendRequest{Header: wire.Header{RequestID: id("send")}, Conversation: "main", Text: "sent by pid " + strconv.Itoa(os.Getpid())}},
		{wire.ActionPath, wire.ActionRequest{Header: wire.Header{RequestID: id("action")}, Action: "slow", Conversation: "main"}},
		{wire.AbortPath, wire.AbortRequest{Header: wire.Header{RequestID: id("abort")}, Conversation: "main"}},
		{wire.RenamePath, wire.RenameRequest{Header: wire.Header{RequestID: id("rename")}, Conversation: "main", Title: "Renamed by " + strconv.Itoa(os.Getpid())}},
		{wire.ClosePath, wire.CloseRequest{Header: wire.Header{RequestID: id("close")}, Conversation: "main"}},
		{wire.ReopenPath, wire.ReopenRequest{Header: wire.Header{RequestID: id("reopen")}, Conversation: "main"}},
		{wire.StarterPath, wire.StarterRequest{Header: wire.Header{RequestID: id("starter")}, Starter: "noop"}},
	}
	for _, st := range steps {
		if st.path == wire.AbortPath {
			time.Sleep(300 * time.Millisecond) // let the tapped command start
		}
		o, _, err := c.do("POST", st.path, st.body)
		if err != nil {
			return fmt.Errorf("%s: %w", st.path, err)
		}
		rep.Writes = append(rep.Writes, Write{Path: st.path, Outcome: o})
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	fmt.Printf("%s\n", b)
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

func tap(c *client, kind, id string) error {
	rid := fmt.Sprintf("tap-%s-%d", id, time.Now().UnixNano())
	var body any
	path := wire.StarterPath
	switch kind {
	case "starter":
		body = wire.StarterRequest{Header: wire.Header{RequestID: rid}, Starter: id}
	case "action":
		path, body = wire.ActionPath, wire.ActionRequest{Header: wire.Header{RequestID: rid}, Action: id}
	default:
		return fmt.Errorf("tap what? %q", kind)
	}
	o, data, err := c.do("POST", path, body)
	if err != nil {
		return err
	}
	if o.Status != 200 {
		return fmt.Errorf("%s: %d %s %s", path, o.Status, o.Code, o.Message)
	}
	fmt.Printf("%s\n", data)
	return nil
}

// AnswerSpec says which question to answer and how.
type AnswerSpec struct {
	Title       string            `json:"title"` // the open question with this title
	Option      string            `json:"option,omitempty"`
	OptionLabel string            `json:"optionLabel,omitempty"`
	Text        string            `json:"text,omitempty"`
	Values      map[string]string `json:"values,omitempty"`
	Reason      string            `json:"reason,omitempty"`
	Always      bool              `json:"always,omitempty"`
}

// answer waits until the question is open, answers it as a device would,
// and prints the reply.
func answer(c *client, spec string) error {
	var a AnswerSpec
	if err := json.Unmarshal([]byte(spec), &a); err != nil {
		return err
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, _, err := snapshot(c)
		if err != nil {
			return err
		}
		for _, cv := range s.Spaces[0].Tabs[0].Conversations {
			for _, q := range cv.Questions {
				if q.Title != a.Title {
					continue
				}
				r := wire.AnswerRequest{Header: wire.Header{RequestID: fmt.Sprintf("answer-%d", time.Now().UnixNano())}, Conversation: cv.ID, Question: q.ID, Revision: q.Revision,
					Text: a.Text, Values: a.Values, Reason: a.Reason, Always: a.Always}
				if a.Option != "" {
					r.OptionIDs = []string{a.Option}
				}
				for _, o := range q.Options {
					if a.OptionLabel != "" && o.Label == a.OptionLabel {
						r.OptionIDs = []string{o.ID}
					}
				}
				o, data, err := c.do("POST", wire.AnswerPath, r)
				if err != nil {
					return err
				}
				if o.Status != 200 {
					return fmt.Errorf("answer: %d %s %s", o.Status, o.Code, o.Message)
				}
				fmt.Printf("%s\n", data)
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no open question titled %q", a.Title)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

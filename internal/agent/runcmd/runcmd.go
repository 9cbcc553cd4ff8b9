// Package runcmd runs the fixed commands of a durable agent's belt buttons
// and starters (D2, D8): an absolute program with fixed arguments, in a
// working directory, with only the environment it is given, in a process
// group of its own so that a timeout or an abort stops everything it
// started. Its output (stdout and stderr together) is kept in a fixed
// amount of memory — the first and the last bytes, with a mark for what was
// left out between them — so a command that prints without end cannot grow
// the agent.
package runcmd

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// Spec is a command to run.
type Spec struct {
	Argv    []string // Argv[0] is an absolute path
	Dir     string   // absolute; "" means /
	Env     []string // KEY=VALUE, exactly what the command gets
	Timeout time.Duration
}

// Sizes of the kept output. Together with the mark they fit the 16 KiB of
// a tool call's output (X4).
const (
	HeadBytes = 4 << 10
	TailBytes = 12<<10 - 128
	// Grace is how long a command gets between SIGTERM and SIGKILL.
	Grace = 3 * time.Second
	// drainAfterExit is how long output is still read after the command
	// exits, from children it left running with the pipe open.
	drainAfterExit = 2 * time.Second
	// Every is how often a running command reports progress.
	Every = 250 * time.Millisecond
)

// Progress is what a command has done so far.
type Progress struct {
	Output   string // the kept output, valid UTF-8 cut at whole characters
	Bytes    int64  // everything it printed
	Running  bool
	Elapsed  time.Duration
	ExitCode int  // when done; -1 when a signal ended it
	TimedOut bool // the timeout stopped it
	Stopped  bool // Stop stopped it
	Err      error
}

// Summary says in one line how the command went.
func (p Progress) Summary() string {
	size := human(p.Bytes)
	el := p.Elapsed.Round(100 * time.Millisecond)
	switch {
	case p.Err != nil:
		return "could not run: " + p.Err.Error()
	case p.Running:
		return fmt.Sprintf("running for %s; %s of output so far", el, size)
	case p.TimedOut:
		return fmt.Sprintf("stopped by its timeout after %s; %s of output", el, size)
	case p.Stopped:
		return fmt.Sprintf("stopped from a paired device after %s; %s of output", el, size)
	case p.ExitCode == 0:
		return fmt.Sprintf("finished in %s; %s of output", el, size)
	case p.ExitCode < 0:
		return fmt.Sprintf("killed by a signal after %s; %s of output", el, size)
	}
	return fmt.Sprintf("failed with exit status %d after %s; %s of output", p.ExitCode, el, size)
}

// Status is the tool call's status: "running", "done" or "failed".
func (p Progress) Status() string {
	switch {
	case p.Running:
		return "running"
	case p.Err == nil && !p.TimedOut && !p.Stopped && p.ExitCode == 0:
		return "done"
	}
	return "failed"
}

func human(n int64) string {
	switch {
	case n >= 10<<20:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 10<<10:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	case n == 1:
		return "1 byte"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// Run is a started command.
type Run struct {
	cmd    *exec.Cmd
	start  time.Time
	update func(Progress)
	done   chan struct{}

	mu       sync.Mutex
	out      capBuffer
	dirty    bool
	exited   bool
	exitCode int
	timedOut bool
	stopped  bool
	killOnce sync.Once
}

// Check says what is wrong with a spec, in a sentence.
func (s Spec) Check() error {
	switch {
	case len(s.Argv) == 0:
		return errors.New("the command is empty; give the program and its arguments")
	case !filepath.IsAbs(s.Argv[0]):
		return fmt.Errorf("the command %q is not an absolute path; give the full path, such as /usr/bin/%s", s.Argv[0], filepath.Base(s.Argv[0]))
	case s.Dir != "" && !filepath.IsAbs(s.Dir):
		return fmt.Errorf("the working directory %q is not an absolute path", s.Dir)
	case s.Timeout <= 0:
		return errors.New("the timeout must be above zero")
	}
	return nil
}

// Start starts the command. update, which may be nil, is called with its
// progress every Every while it prints, and once at the end; it must not
// block for long. The command runs until it exits, its timeout passes, or
// Stop.
func Start(s Spec, update func(Progress)) (*Run, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("make the output pipe: %w", err)
	}
	cmd := exec.Command(s.Argv[0], s.Argv[1:]...)
	cmd.Dir = s.Dir
	if cmd.Dir == "" {
		cmd.Dir = "/"
	}
	cmd.Env = s.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = groupAttr()
	if update == nil {
		update = func(Progress) {}
	}
	r := &Run{cmd: cmd, update: update, done: make(chan struct{}), start: time.Now()}
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, fmt.Errorf("start %s: %w", s.Argv[0], err)
	}
	pw.Close()

	exited := make(chan struct{})
	read := make(chan struct{})
	go r.read(pr, read)
	go func() {
		err := cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode() // -1 for a signal
		}
		r.mu.Lock()
		r.exited, r.exitCode = true, code
		r.mu.Unlock()
		close(exited)
	}()
	timeout := time.NewTimer(s.Timeout)
	go func() {
		tick := time.NewTicker(Every)
		defer tick.Stop()
		defer timeout.Stop()
		var drain <-chan time.Time
		for {
			select {
			case <-timeout.C:
				r.mu.Lock()
				r.timedOut = true
				r.mu.Unlock()
				r.kill()
			case <-tick.C:
				r.mu.Lock()
				send := r.dirty
				r.dirty = false
				r.mu.Unlock()
				if send {
					r.update(r.progress())
				}
			case <-exited:
				exited = nil
				drain = time.After(drainAfterExit)
			case <-drain:
				pr.Close() // children hold the pipe open: stop reading
				drain = nil
			case <-read:
				read = nil
			}
			if exited == nil && read == nil {
				r.update(r.progress())
				close(r.done)
				return
			}
		}
	}()
	return r, nil
}

func (r *Run) read(pr *os.File, done chan<- struct{}) {
	defer close(done)
	defer pr.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := pr.Read(buf)
		if n > 0 {
			r.mu.Lock()
			r.out.write(buf[:n])
			r.dirty = true
			r.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// kill stops the command's whole process group: SIGTERM, then SIGKILL
// after Grace.
func (r *Run) kill() {
	r.killOnce.Do(func() {
		pid := r.cmd.Process.Pid
		signalGroup(r.cmd.Process, pid, false)
		go func() {
			select {
			case <-time.After(Grace):
			case <-r.done:
			}
			signalGroup(r.cmd.Process, pid, true)
		}()
	})
}

// Stop stops the command and everything in its process group.
func (r *Run) Stop() {
	r.mu.Lock()
	running := !r.exited
	if running {
		r.stopped = true
	}
	r.mu.Unlock()
	if running {
		r.kill()
	}
}

// Done is closed once the command has exited and its output is read.
func (r *Run) Done() <-chan struct{} { return r.done }

// PID returns the command's pid, which is also its process group id.
func (r *Run) PID() int { return r.cmd.Process.Pid }

// Progress returns what the command has done so far.
func (r *Run) Progress() Progress { return r.progress() }

func (r *Run) progress() Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Progress{
		Output: r.out.String(), Bytes: r.out.total,
		Running: !r.exited, Elapsed: time.Since(r.start),
		ExitCode: r.exitCode, TimedOut: r.timedOut, Stopped: r.stopped,
	}
}

// capBuffer keeps the first HeadBytes and the last TailBytes of what is
// written to it.
type capBuffer struct {
	head  []byte
	tail  []byte // a ring of TailBytes once full
	pos   int    // next write position in tail when full
	total int64
}

func (c *capBuffer) write(p []byte) {
	c.total += int64(len(p))
	if n := HeadBytes - len(c.head); n > 0 {
		n = min(n, len(p))
		c.head = append(c.head, p[:n]...)
		p = p[n:]
	}
	if len(p) == 0 {
		return
	}
	if c.tail == nil {
		c.tail = make([]byte, 0, TailBytes)
	}
	if len(p) >= TailBytes {
		c.tail = append(c.tail[:0], p[len(p)-TailBytes:]...)
		c.pos = 0
		return
	}
	for len(p) > 0 {
		if len(c.tail) < TailBytes {
			n := min(TailBytes-len(c.tail), len(p))
			c.tail = append(c.tail, p[:n]...)
			p = p[n:]
			continue
		}
		n := copy(c.tail[c.pos:], p)
		c.pos = (c.pos + n) % TailBytes
		p = p[n:]
	}
}

// String returns the head, a mark for what was left out, and the tail,
// each cut at whole UTF-8 characters.
func (c *capBuffer) String() string {
	tail := c.tail
	if len(c.tail) == TailBytes && c.pos != 0 {
		tail = append(append(make([]byte, 0, TailBytes), c.tail[c.pos:]...), c.tail[:c.pos]...)
	}
	skipped := c.total - int64(len(c.head)) - int64(len(tail))
	if skipped <= 0 {
		return string(c.head) + string(tail)
	}
	head := c.head
	for i := 1; i <= 4 && i <= len(head); i++ {
		if utf8.RuneStart(head[len(head)-i]) {
			if !utf8.FullRune(head[len(head)-i:]) {
				head = head[:len(head)-i]
			}
			break
		}
	}
	for i := 0; i < 4 && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	return string(head) + "\n… " + human(skipped) + " not shown …\n" + string(tail)
}

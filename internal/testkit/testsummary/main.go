// Command testsummary runs go test with -json and prints what go test
// prints without it (each package's closing "ok" or "FAIL" line, a failed
// test's output), then the tests that were skipped, grouped by their
// reason, so that `make test` does not hide what it skipped. It exits with
// go test's exit status.
//
//	go run ./internal/testkit/testsummary [-v] [-skips FILE] go test ARGS...
//	go run ./internal/testkit/testsummary -report FILE
//
// -v prints every line of output, as go test -v does. -skips appends the
// skipped tests to FILE (one JSON object a line) instead of printing them;
// -report prints the skips FILE holds (make test runs go test twice, then
// reports once).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
)

func main() {
	verbose := flag.Bool("v", false, "print every line of output, as go test -v does")
	skipsFile := flag.String("skips", "", "append the skipped tests to this file instead of printing them")
	report := flag.String("report", "", "print the skipped tests this file holds, and run nothing")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: testsummary [-v] [-skips FILE] go test ARGS...\n       testsummary -report FILE")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *report != "" {
		skips, err := readSkips(*report)
		if err != nil {
			fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
			os.Exit(1)
		}
		printSkips(os.Stdout, skips)
		return
	}
	args := flag.Args()
	if len(args) < 2 || args[1] != "test" {
		flag.Usage()
		os.Exit(2)
	}
	os.Exit(run(os.Stdout, args, *verbose, *skipsFile))
}

// run runs the go test command args with -json, writes its output to w
// and returns its exit status.
func run(w io.Writer, args []string, verbose bool, skipsFile string) int {
	cmd := exec.Command(args[0], append([]string{"test", "-json"}, args[2:]...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "testsummary: run %s: %v\n", strings.Join(args, " "), err)
		return 1
	}
	f := newFilter(w, verbose)
	f.read(out)
	f.flushAll()
	status := 0
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
			return 1
		}
		status = ee.ExitCode()
		if status < 0 {
			status = 1 // killed by a signal
		}
		fmt.Fprintln(w, "FAIL") // go test's last line when something failed
	}
	if skipsFile != "" {
		if err := appendSkips(skipsFile, f.skips); err != nil {
			fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
			return max(status, 1)
		}
	} else {
		printSkips(w, f.skips)
	}
	return status
}

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
	Output     string
}

// skip is a skipped test and why.
type skip struct {
	Package string `json:"package"`
	Test    string `json:"test"`
	Reason  string `json:"reason"`
}

// filter turns go test -json back into go test's own output: without
// -v, each package's lines together when it ends, as go test prints them.
type filter struct {
	w       io.Writer
	verbose bool
	held    map[string][]string // a running test's output, by package and test
	pkgOut  map[string][]string // a running package's lines to print
	pkgs    []string            // running packages, in the order they began
	skips   []skip
}

func newFilter(w io.Writer, verbose bool) *filter {
	return &filter{w: w, verbose: verbose, held: map[string][]string{}, pkgOut: map[string][]string{}}
}

// print prints s for pkg: at once with -v, else when pkg ends.
func (f *filter) print(pkg, s string) {
	if f.verbose {
		io.WriteString(f.w, s)
		return
	}
	if _, ok := f.pkgOut[pkg]; !ok {
		f.pkgs = append(f.pkgs, pkg)
	}
	f.pkgOut[pkg] = append(f.pkgOut[pkg], s)
}

// flush prints what pkg held back.
func (f *filter) flush(pkg string) {
	for _, s := range f.pkgOut[pkg] {
		io.WriteString(f.w, s)
	}
	delete(f.pkgOut, pkg)
}

// flushAll prints what packages that never ended (a crash) held back.
func (f *filter) flushAll() {
	for _, p := range f.pkgs {
		f.flush(p)
	}
	f.pkgs = nil
}

func (f *filter) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			fmt.Fprintf(f.w, "%s\n", line) // not an event: as it came
			continue
		}
		f.event(ev)
	}
}

func (f *filter) event(ev event) {
	key := ev.Package + "\x00" + ev.Test
	switch {
	case ev.Action == "build-output":
		io.WriteString(f.w, ev.Output)
	case ev.Action == "output" && ev.Test == "":
		// The package's own lines: its closing "ok" or "FAIL", a panic
		// outside a test. go test without -v does not print "PASS".
		if f.verbose || ev.Output != "PASS\n" {
			f.print(ev.Package, ev.Output)
		}
	case ev.Action == "output":
		if f.verbose {
			io.WriteString(f.w, ev.Output)
		}
		f.held[key] = append(f.held[key], ev.Output)
	case ev.Test == "":
		if ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip" {
			f.flush(ev.Package)
		}
	case ev.Action == "fail":
		if !f.verbose {
			for _, s := range f.held[key] {
				if !strings.HasPrefix(strings.TrimLeft(s, " "), "=== ") {
					f.print(ev.Package, s)
				}
			}
		}
		delete(f.held, key)
	case ev.Action == "skip":
		f.skips = append(f.skips, skip{Package: ev.Package, Test: ev.Test, Reason: reason(f.held[key])})
		delete(f.held, key)
	case ev.Action == "pass":
		delete(f.held, key)
	}
}

// reason is a skipped test's log, without go test's own lines and
// without the file:line each log line starts with.
func reason(lines []string) string {
	var out []string
	for _, s := range lines {
		s = strings.TrimSpace(s)
		if s == "" || strings.HasPrefix(s, "=== ") || strings.HasPrefix(s, "--- SKIP") {
			continue
		}
		if file, rest, ok := strings.Cut(s, ": "); ok && strings.Contains(file, ".go:") && !strings.Contains(file, " ") {
			s = rest
		}
		out = append(out, strings.TrimPrefix(s, "skipped: "))
	}
	if len(out) == 0 {
		return "no reason given"
	}
	return strings.Join(out, " ")
}

func appendSkips(path string, skips []skip) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("keep the skipped tests: %w", err)
	}
	enc := json.NewEncoder(f)
	for _, s := range skips {
		if err := enc.Encode(s); err != nil {
			f.Close()
			return fmt.Errorf("keep the skipped tests in %s: %w", path, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("keep the skipped tests in %s: %w", path, err)
	}
	return nil
}

func readSkips(path string) ([]skip, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // nothing ran, or nothing was skipped
	}
	if err != nil {
		return nil, fmt.Errorf("read the skipped tests: %w", err)
	}
	var out []skip
	dec := json.NewDecoder(strings.NewReader(string(data)))
	for dec.More() {
		var s skip
		if err := dec.Decode(&s); err != nil {
			return nil, fmt.Errorf("read the skipped tests in %s: %w", path, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// printSkips writes the skipped tests grouped by reason, the reason that
// skipped most first, each with its tests by package.
func printSkips(w io.Writer, skips []skip) {
	if len(skips) == 0 {
		fmt.Fprintln(w, "skipped: none")
		return
	}
	byReason := map[string][]skip{}
	for _, s := range skips {
		byReason[s.Reason] = append(byReason[s.Reason], s)
	}
	reasons := slices.Collect(maps.Keys(byReason))
	sort.Slice(reasons, func(i, j int) bool {
		a, b := byReason[reasons[i]], byReason[reasons[j]]
		if len(a) != len(b) {
			return len(a) > len(b)
		}
		return reasons[i] < reasons[j]
	})
	fmt.Fprintf(w, "skipped: %d %s, for %d %s:\n", len(skips), plural(len(skips), "test", "tests"), len(reasons), plural(len(reasons), "reason", "reasons"))
	for _, r := range reasons {
		list := byReason[r]
		fmt.Fprintf(w, "  %s (%d)\n", r, len(list))
		byPkg := map[string][]string{}
		var pkgs []string
		for _, s := range list {
			if _, ok := byPkg[s.Package]; !ok {
				pkgs = append(pkgs, s.Package)
			}
			byPkg[s.Package] = append(byPkg[s.Package], s.Test)
		}
		sort.Strings(pkgs)
		for _, p := range pkgs {
			fmt.Fprintf(w, "    %s: %s\n", p, strings.Join(byPkg[p], ", "))
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

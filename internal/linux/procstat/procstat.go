// Package procstat parses /proc/PID/stat: the state, the parent and the
// start time of a process. The command name in it is the process's own
// choice and may hold anything but NUL, so the fields are found after the
// last ')' of the line. The caller check and collie doctor read it.
package procstat

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// Stat is what a reader takes from /proc/PID/stat.
type Stat struct {
	State     byte
	PPID      int
	StartTime uint64 // clock ticks after boot
}

// Parse parses the content of /proc/PID/stat. The second field, the
// command name in parentheses, is chosen by the process (prctl, or the
// name of the file it runs) and may hold spaces, parentheses and even
// "fake" fields such as "x) S 1": the real fields start after the last
// ')' of the line, which the name cannot be after.
func Parse(b []byte) (Stat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || bytes.IndexByte(b, '(') < 0 {
		return Stat{}, errors.New("no command name")
	}
	rest := b[i+1:]
	// Fields after the name: 3 state, 4 ppid, …, 22 starttime.
	var fields [20][]byte
	n := 0
	for n < len(fields) {
		for len(rest) > 0 && rest[0] == ' ' {
			rest = rest[1:]
		}
		if len(rest) == 0 {
			break
		}
		j := bytes.IndexAny(rest, " \n")
		if j < 0 {
			j = len(rest)
		}
		fields[n] = rest[:j]
		rest = rest[j:]
		n++
	}
	if n < len(fields) || len(fields[0]) != 1 {
		return Stat{}, fmt.Errorf("%d fields after the command name, want at least %d", n, len(fields))
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	if err != nil || ppid < 0 {
		return Stat{}, fmt.Errorf("bad parent pid %q", fields[1])
	}
	start, err := strconv.ParseUint(string(fields[19]), 10, 64)
	if err != nil {
		return Stat{}, fmt.Errorf("bad start time %q", fields[19])
	}
	return Stat{State: fields[0][0], PPID: ppid, StartTime: start}, nil
}

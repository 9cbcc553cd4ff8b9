package runagent

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/collie-linux/collie/internal/linux/systemd"
)

// Protections a run can have, weakest last. Each keeps the tools the
// coding agent runs from answering its questions in its own way; see
// Contain.
const (
	// Scope: the agent and the child in a transient scope of the user
	// manager (systemd-run --user --scope's kind of unit). A tool that
	// double-forks stays in the scope's cgroup.
	Scope = "cgroup scope"
	// ChildCgroup: the agent and the child in a cgroup the agent made
	// below its own, where the cgroup tree is writable (root, or a
	// delegated subtree) and no user manager answered.
	ChildCgroup = "child cgroup"
	// Family: neither could be had. The caller check refuses the agent's
	// descendants only; the agent is their child subreaper, so a tool
	// that double-forks is re-parented to it and stays in the family.
	Family = "process family"
)

// containment is where the run's processes were put, and how to undo it.
type containment struct {
	Protection string
	Cgroup     string // the cgroup2 path of the run ("" for Family)
	Unit       string // the scope's unit name (Scope only)
	Why        string // why a stronger protection could not be had
	undo       func() error
}

// contain puts this process (and so every process it starts after) in a
// cgroup of its own: a transient scope when the user manager answers, else
// a child cgroup where the tree is writable, else nothing (Family). The
// caller check reads the agent's cgroup when it is made, so contain runs
// before it. useManager false skips the user manager (tests, --no-systemd).
func contain(ctx context.Context, name, description string, useManager bool, getenv func(string) string) containment {
	var whys []string
	if useManager {
		c, err := scope(ctx, name, description, getenv)
		if err == nil {
			return c
		}
		whys = append(whys, "no user manager scope: "+err.Error())
	}
	c, err := childCgroup(name)
	if err == nil {
		c.Why = strings.Join(whys, "; ")
		return c
	}
	whys = append(whys, "no child cgroup: "+err.Error())
	return containment{Protection: Family, Why: strings.Join(whys, "; "), undo: func() error { return nil }}
}

// scope asks the user manager for collie-run-NAME-PID.scope holding this
// process, and checks that this process is in it afterwards.
func scope(ctx context.Context, name, description string, getenv func(string) string) (containment, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	um, err := systemd.ConnectUserManager(ctx, getenv)
	if err != nil {
		return containment{}, err
	}
	defer um.Close()
	unit := "collie-run-" + name + "-" + strconv.Itoa(os.Getpid()) + ".scope"
	if err := um.StartScope(ctx, unit, description, os.Getpid()); err != nil {
		return containment{}, err
	}
	cg, err := selfCgroup()
	if err != nil {
		return containment{}, err
	}
	if filepath.Base(cg) != unit {
		return containment{}, fmt.Errorf("the user manager started %s, but this process is in %s", unit, cg)
	}
	// The scope ends by itself when its last process exits.
	return containment{Protection: Scope, Cgroup: cg, Unit: unit, undo: func() error { return nil }}, nil
}

// childCgroup makes the cgroup collie-run-NAME-PID below this process's own
// in the cgroup2 hierarchy and moves this process into it.
func childCgroup(name string) (containment, error) {
	root := cgroup2Mount()
	if root == "" {
		return containment{}, errors.New("no cgroup2 hierarchy is mounted")
	}
	parent, err := selfCgroup()
	if err != nil {
		return containment{}, err
	}
	cg := filepath.Join(parent, "collie-run-"+name+"-"+strconv.Itoa(os.Getpid()))
	dir := filepath.Join(root, cg)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return containment{}, fmt.Errorf("make %s: %w", dir, err)
	}
	pid := []byte(strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), pid, 0); err != nil {
		syscall.Rmdir(dir)
		return containment{}, fmt.Errorf("move into %s: %w", dir, err)
	}
	undo := func() error {
		// Out again, so the folder can go; a tool still running in it
		// keeps it (rmdir says EBUSY) until it exits.
		if err := os.WriteFile(filepath.Join(root, parent, "cgroup.procs"), pid, 0); err != nil {
			return fmt.Errorf("move back to %s: %w", parent, err)
		}
		if err := syscall.Rmdir(dir); err != nil {
			return fmt.Errorf("remove %s (a tool of the run may still be running in it): %w", dir, err)
		}
		return nil
	}
	return containment{Protection: ChildCgroup, Cgroup: cg, undo: undo}, nil
}

// selfCgroup is this process's path in the cgroup2 hierarchy.
func selfCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok && p != "" {
			return p, nil
		}
	}
	return "", errors.New("this process is in no cgroup2 hierarchy")
}

// cgroup2Mount is where the cgroup2 hierarchy is mounted (its root):
// /sys/fs/cgroup on unified machines, /sys/fs/cgroup/unified on hybrid
// ones, "" when there is none.
func cgroup2Mount() string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		left, right, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		lf, rf := strings.Fields(left), strings.Fields(right)
		if len(lf) >= 5 && len(rf) >= 1 && rf[0] == "cgroup2" && lf[3] == "/" {
			return lf[4]
		}
	}
	return ""
}

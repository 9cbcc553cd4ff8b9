package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/collie-linux/collie/internal/bridge/audit"
	"github.com/collie-linux/collie/internal/linux/systemd/journald"
)

// anchorToJournal is the daemon's audit.Options.Anchor: each anchor is a
// journal entry with MESSAGE_ID MsgAuditAnchor and the fields AUDIT_DIR,
// AUDIT_HEAD and AUDIT_TIME, which journalAnchors reads back. journald
// stamps it with the trusted _UID that journalAnchors matches.
func anchorToJournal(log *slog.Logger) func(audit.Anchor) {
	return func(a audit.Anchor) {
		log.Info("audit log anchored: its chain head is kept here for collie audit verify",
			journald.MessageID(journald.MsgAuditAnchor), "audit_dir", a.Dir, "audit_head", a.Head,
			"audit_time", a.Time.UTC().Format(time.RFC3339Nano))
	}
}

// warnRepair is the daemon's audit.Options.OnRepair: a warning line for
// each end of the log mended after start (Open's come in Opened.Repaired).
func warnRepair(log *slog.Logger) func(audit.Repair) {
	return func(r audit.Repair) {
		log.Warn("the audit log was repaired", "path", r.Path, "offset", r.Offset, "reason", r.What)
	}
}

// errNoJournal is a journal that cannot be read here: journald is not
// running, journalctl is missing, or it found no journal files.
var errNoJournal = errors.New("no journal")

// journalAnchors reads the anchors the user's own daemon wrote, with
// journalctl -o json, matching MESSAGE_ID and the user's _UID (a field
// journald sets, which no process can forge). Entries that are not
// anchors as anchorToJournal writes them are skipped.
func journalAnchors(ctx context.Context, getenv func(string) string, uid int) ([]audit.Anchor, error) {
	if !journald.Running() {
		return nil, fmt.Errorf("%w: journald is not running here", errNoJournal)
	}
	const bin = "journalctl"
	path, err := lookPath(bin, getenv("PATH"))
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not installed", errNoJournal, bin)
	}
	cmd := exec.CommandContext(ctx, path, "-o", "json", "--no-pager", "-q", "--all",
		"MESSAGE_ID="+journald.MsgAuditAnchor, "_UID="+strconv.Itoa(uid))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	msg := strings.TrimSpace(stderr.String())
	if strings.Contains(msg, "No journal files were found") {
		return nil, fmt.Errorf("%w: journalctl found no journal files", errNoJournal)
	}
	if err != nil {
		if first, _, _ := strings.Cut(msg, "\n"); first != "" {
			err = fmt.Errorf("%w: %s", err, first)
		}
		return nil, fmt.Errorf("%w: journalctl failed: %v", errNoJournal, err)
	}
	return parseAnchors(out), nil
}

// parseAnchors reads journalctl -o json output, one entry a line.
func parseAnchors(out []byte) []audit.Anchor {
	var anchors []audit.Anchor
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e map[string]json.RawMessage
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		field := func(k string) string {
			var s string
			if json.Unmarshal(e[k], &s) != nil { // a repeated or binary field is an array: not ours
				return ""
			}
			return s
		}
		t, err := time.Parse(time.RFC3339Nano, field("AUDIT_TIME"))
		a := audit.Anchor{Dir: field("AUDIT_DIR"), Head: field("AUDIT_HEAD"), Time: t}
		if err != nil || a.Dir == "" || len(a.Head) != 64 {
			continue
		}
		if us, err := strconv.ParseInt(field("__REALTIME_TIMESTAMP"), 10, 64); err == nil {
			a.Logged = time.UnixMicro(us)
		}
		anchors = append(anchors, a)
	}
	return anchors
}

// lookPath finds bin in the PATH given (the env's, not the process's).
func lookPath(bin, path string) (string, error) {
	if strings.Contains(bin, "/") {
		return bin, nil
	}
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			continue
		}
		p := dir + "/" + bin
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

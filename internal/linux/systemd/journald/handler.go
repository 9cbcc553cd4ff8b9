// Package journald sends the daemon's log/slog records to journald as native
// entries, with a priority and one structured field per attribute, when
// stderr is connected to the journal; elsewhere it writes text to stderr.
package journald

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/coreos/go-systemd/v22/journal"
)

// NewLogger returns the logger a Collie program should use. identifier is
// the SYSLOG_IDENTIFIER (the program's name). When stderr is not the
// journal, it logs text to stderr.
func NewLogger(identifier string, stderr io.Writer, level slog.Leveler) *slog.Logger {
	if ToJournal() {
		return slog.New(NewHandler(identifier, level, journal.Send))
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
}

// ToJournal reports whether stderr is connected to the journal (a service
// of systemd) and journald takes native entries: then a program's log goes
// to the journal as native entries with priorities.
func ToJournal() bool {
	ok, _ := journal.StderrIsJournalStream()
	return ok && journal.Enabled()
}

// Running reports whether journald takes entries on this machine: its
// socket /run/systemd/journal/socket is there.
func Running() bool { return journal.Enabled() }

// Fatal reports the error that makes a program stop, as its last word.
// When stderr is the journal it is a native entry at PRIORITY=3 (err),
// with fields and with MESSAGE made as [Message] makes it (the agent in
// front), so that `journalctl --user -u UNIT -p err` shows the reason;
// elsewhere it is the line "identifier: text" on stderr.
func Fatal(stderr io.Writer, identifier, text string, fields map[string]string) {
	var send SendFunc
	if ToJournal() {
		send = journal.Send
	}
	fatal(stderr, identifier, text, fields, send)
}

// fatal is Fatal with the journal's sender given; nil when stderr is not
// the journal. If the journal refuses the entry, the line goes to stderr
// with the syslog prefix <3>, which journald's stream reader turns into
// PRIORITY=3 (SyslogLevelPrefix=yes, systemd's default).
func fatal(stderr io.Writer, identifier, text string, fields map[string]string, send SendFunc) {
	if send == nil {
		fmt.Fprintf(stderr, "%s: %s\n", identifier, text)
		return
	}
	vars := make(map[string]string, len(fields)+1)
	for k, v := range fields {
		vars[fieldName(k)] = v
	}
	vars["SYSLOG_IDENTIFIER"] = identifier
	msg := Message(text, vars)
	if err := send(msg, journal.PriErr, vars); err != nil {
		fmt.Fprintf(stderr, "<%d>%s\n", journal.PriErr, msg)
	}
}

// SendFunc writes one journal entry; journal.Send in production.
type SendFunc func(message string, priority journal.Priority, vars map[string]string) error

// Handler is a slog.Handler that writes native journal entries.
type Handler struct {
	identifier string
	level      slog.Leveler
	send       SendFunc
	prefix     string            // group prefix for field names
	fields     map[string]string // from WithAttrs
	mu         *sync.Mutex       // one entry at a time keeps order
}

// NewHandler returns a handler that hands each record to send.
func NewHandler(identifier string, level slog.Leveler, send SendFunc) *Handler {
	if level == nil {
		level = slog.LevelInfo
	}
	return &Handler{identifier: identifier, level: level, send: send, fields: map[string]string{}, mu: &sync.Mutex{}}
}

// Enabled implements slog.Handler.
func (h *Handler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

// Handle implements slog.Handler.
func (h *Handler) Handle(_ context.Context, r slog.Record) error {
	vars := make(map[string]string, len(h.fields)+r.NumAttrs()+1)
	for k, v := range h.fields {
		vars[k] = v
	}
	var details []string
	r.Attrs(func(a slog.Attr) bool {
		addAttr(vars, h.prefix, a)
		details = appendDetail(details, h.prefix, a)
		return true
	})
	vars["SYSLOG_IDENTIFIER"] = h.identifier
	msg := Message(r.Message, vars)
	if len(details) > 0 {
		msg += " (" + strings.Join(details, " ") + ")"
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.send(msg, Priority(r.Level), vars); err != nil {
		return fmt.Errorf("write to the journal: %w", err)
	}
	return nil
}

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	h2 := *h
	h2.fields = make(map[string]string, len(h.fields)+len(attrs))
	for k, v := range h.fields {
		h2.fields[k] = v
	}
	for _, a := range attrs {
		addAttr(h2.fields, h.prefix, a)
	}
	return &h2
}

// WithGroup implements slog.Handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.prefix = h.prefix + fieldName(name) + "_"
	return &h2
}

// Message is the MESSAGE of an entry: the record's message with the agent
// it is about in front and the reason after it, so that journalctl's
// plain output (which shows MESSAGE only) says which agent and why:
//
//	agent demo: durable agent is unreachable: no socket at /run/user/1000/desk/demo.sock
//
// The handler adds the record's other details after it (appendDetail).
// The agent comes from the AGENT field, the reason from ERR, ERROR and
// REASON (in that order, each once); they stay fields too.
func Message(msg string, vars map[string]string) string {
	if a := vars["AGENT"]; a != "" {
		msg = "agent " + a + ": " + msg
	}
	for _, k := range []string{"ERR", "ERROR", "REASON"} {
		if v := vars[k]; v != "" {
			msg += ": " + v
		}
	}
	return msg
}

// appendDetail adds attribute a of a record, as key=value, to the details
// its MESSAGE ends with: journalctl's plain output shows MESSAGE only, so
// a line such as "a device was paired" says which device there, not only
// in its fields. The agent and the reason are in MESSAGE already
// (Message), MESSAGE_ID is the catalog's, and a key that names a secret
// (token, secret, password, credential, cookie) stays out of MESSAGE.
func appendDetail(details []string, prefix string, a slog.Attr) []string {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += fieldName(a.Key) + "_"
		}
		for _, g := range v.Group() {
			details = appendDetail(details, p, g)
		}
		return details
	}
	if a.Key == "" {
		return details
	}
	name := prefix + fieldName(a.Key)
	switch name {
	case "AGENT", "ERR", "ERROR", "REASON", "MESSAGE_ID":
		return details
	}
	for _, s := range []string{"TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "COOKIE"} {
		if strings.Contains(name, s) {
			return details
		}
	}
	return append(details, strings.ToLower(name)+"="+detailValue(v.String()))
}

// detailValue quotes a value, as log/slog's text handler does, when it is
// empty or holds a space, a quote, an equals sign or a character that is
// not printable: one line, and the details stay apart.
func detailValue(s string) string {
	if s == "" || strings.ContainsAny(s, " \"=") || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// Priority maps a slog level to a syslog priority: error and above is err
// (3), warning is warning (4), info is info (6), below is debug (7).
func Priority(l slog.Level) journal.Priority {
	switch {
	case l >= slog.LevelError:
		return journal.PriErr
	case l >= slog.LevelWarn:
		return journal.PriWarning
	case l >= slog.LevelInfo:
		return journal.PriInfo
	}
	return journal.PriDebug
}

func addAttr(vars map[string]string, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += fieldName(a.Key) + "_"
		}
		for _, g := range v.Group() {
			addAttr(vars, p, g)
		}
		return
	}
	if a.Key == "" {
		return
	}
	vars[prefix+fieldName(a.Key)] = v.String()
}

// fieldName makes a journal field name: upper case letters, digits and
// underscores, not starting with an underscore (those are journald's own).
func fieldName(key string) string {
	var b strings.Builder
	for _, r := range key {
		switch {
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	name := strings.TrimLeft(b.String(), "_")
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		name = "F" + name
	}
	return name
}

//go:build linux

package systemdtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// JournalEntry is one journal entry: field name to value. journalctl -o
// json writes binary values as arrays of bytes, and a field that occurs
// more than once as an array of values; here the former are strings and
// the latter are joined with newlines.
type JournalEntry map[string]string

// JournalEntries returns the entries that journalctl args... selects,
// oldest first; args are matches such as "_SYSTEMD_USER_UNIT=x.service"
// and any other journalctl options (not -o).
func (um *UserManager) JournalEntries(ctx context.Context, args ...string) ([]JournalEntry, error) {
	out, err := um.Journal(ctx, append([]string{"-o", "json", "--all"}, args...)...)
	if err != nil {
		return nil, err
	}
	return parseJournalJSON(out)
}

func parseJournalJSON(out string) ([]JournalEntry, error) {
	var entries []JournalEntry
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var raw map[string]any
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			return entries, nil
		} else if err != nil {
			return entries, fmt.Errorf("parsing journalctl -o json: %w", err)
		}
		e := make(JournalEntry, len(raw))
		for k, v := range raw {
			e[k] = journalValue(v)
		}
		entries = append(entries, e)
	}
}

func journalValue(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		if len(v) > 0 {
			if _, ok := v[0].(float64); ok { // one binary value
				b := make([]byte, 0, len(v))
				for _, x := range v {
					n, _ := x.(float64)
					b = append(b, byte(n))
				}
				return string(b)
			}
		}
		vals := make([]string, len(v))
		for i, x := range v {
			vals[i] = journalValue(x)
		}
		return strings.Join(vals, "\n")
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

// WaitJournal polls the journal until an entry selected by args...
// satisfies match, and returns it. Output of services reaches the journal
// asynchronously, so a test that has just seen a service act should wait
// for its lines rather than read once. Lines of a service that exits at
// once may lack _SYSTEMD_USER_UNIT (see the package doc, Known limits).
func (um *UserManager) WaitJournal(ctx context.Context, match func(JournalEntry) bool, args ...string) (JournalEntry, error) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var seen []JournalEntry
	for {
		entries, err := um.JournalEntries(ctx, args...)
		if err == nil {
			seen = entries
			for _, e := range entries {
				if match(e) {
					return e, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			var msgs []string
			for _, e := range seen {
				msgs = append(msgs, e["MESSAGE"])
			}
			return nil, fmt.Errorf("no matching journal entry for %q (%v); messages seen: %q", args, ctx.Err(), msgs)
		case <-tick.C:
		}
	}
}

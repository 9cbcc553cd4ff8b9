package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/collie-linux/collie/internal/bridge/audit"
	"github.com/collie-linux/collie/internal/cli"
	"github.com/collie-linux/collie/internal/cli/hint"
)

// cmdAudit shows the audit log (A1-A4); `collie audit verify`
// (cmdAuditVerify) checks its hash chain.
func cmdAudit(ctx context.Context, e *env, args []string) error {
	fs := newFlags("collie audit", e)
	agent := fs.String("agent", "", "show only the lines of the durable agent `NAME`")
	device := fs.String("device", "", "show only the lines of the device `ID`")
	event := fs.String("event", "", "show only the event `E` ("+strings.Join(audit.Events, ", ")+")")
	since := fs.String("since", "", "show only lines from `DUR` ago (30s, 90m, 24h, 7d) or from an RFC 3339 time")
	asJSON := fs.Bool("json", false, "print the lines as they are in the log, one JSON object a line")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *event != "" && !slices.Contains(audit.Events, *event) {
		if s := cli.Suggest(*event, audit.Events); s != "" {
			return usagef("--event %q is not an event Collie records; did you mean %s? The events are: %s", *event, s, strings.Join(audit.Events, ", "))
		}
		return usagef("--event %q is not an event Collie records; use one of %s", *event, strings.Join(audit.Events, ", "))
	}
	var from time.Time
	if *since != "" {
		var err error
		if from, err = parseSince(*since, time.Now()); err != nil {
			return err
		}
	}
	paths, err := e.paths()
	if err != nil {
		return err
	}
	files, err := audit.Files(paths.State)
	if err != nil {
		return err
	}
	if len(files) == 0 { // not an error: exit 0, a note on stdout (no line with --json)
		if !*asJSON {
			fmt.Fprintf(e.stdout, "no audit log at %s yet; the daemon writes a line there for each write from a paired device\n", filepath.Join(paths.State, audit.LogName))
		}
		return nil
	}
	var recs []audit.Record
	ended := map[string]bool{} // pending lines (a write begun) whose outcome is in the log
	err = audit.Read(paths.State, func(r audit.Record) {
		if intent, ok := r.Get("intent").(string); ok {
			ended[intent] = true
		}
		if (*agent == "" || r.Session == *agent) && (*device == "" || r.Device == *device) &&
			(*event == "" || r.Event == *event) && !r.Time.Before(from) {
			recs = append(recs, r)
		}
	}, func(p audit.Problem) {
		fmt.Fprintf(e.stderr, "collie: %s line %d is not an audit record; run collie audit verify\n", filepath.Base(p.File), p.Line)
	})
	if err != nil {
		return err
	}
	if !*asJSON { // the table shows a write once: its outcome, or that it is unknown
		recs = slices.DeleteFunc(recs, func(r audit.Record) bool { return r.Result() == audit.StatusPending && ended[r.Hash] })
	}
	if *asJSON {
		for _, r := range recs {
			e.stdout.Write(append(r.Raw, '\n'))
		}
		return nil
	}
	if len(recs) == 0 {
		fmt.Fprintln(e.stdout, "no audit lines match")
		return nil
	}
	printAudit(e.stdout, recs)
	return nil
}

// parseSince reads --since: a duration back from now (Go's, or whole
// days with "d"), or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			return now.AddDate(0, 0, -n), nil
		}
	}
	d, err := cli.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, usagef("--since %q is neither a duration back from now (a number with its unit, such as 30s, 10m, 24h or 7d) nor an RFC 3339 time (2026-12-01T10:00:00Z)", s)
	}
	return now.Add(-d), nil
}

// printAudit writes the table: time, agent, device, event, result and
// the event's other fields. Every string from the log is quoted when it
// holds anything but plain characters, so a line cannot move the cursor
// or reorder what the terminal shows.
func printAudit(w io.Writer, recs []audit.Record) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tAGENT\tDEVICE\tEVENT\tRESULT\tDETAILS")
	for _, r := range recs {
		var details []string
		for _, f := range r.Fields {
			if f.Key == "result" || f.Key == "intent" {
				continue
			}
			details = append(details, f.Key+"="+auditValue(f.Value))
		}
		result := r.Result()
		if result == audit.StatusPending {
			result = "unknown"
			details = append(details, "(outcome unknown: the bridge stopped)")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.Local().Format("2006-01-02 15:04:05"),
			auditString(r.Session), auditString(r.Device), auditString(r.Event), result, strings.Join(details, " "))
	}
	tw.Flush()
}

func auditValue(v any) string {
	switch v := v.(type) {
	case string:
		return auditString(v)
	case []string:
		out := make([]string, len(v))
		for i, s := range v {
			out[i] = auditString(s)
		}
		return strings.Join(out, ",")
	}
	return fmt.Sprint(v)
}

// auditString is s bare when it is plain (letters, digits and -._:@/()), "-"
// when empty, else quoted with Go's escapes.
func auditString(s string) string {
	if s == "" {
		return "-"
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-._:@/()", c)) {
			return strconv.QuoteToGraphic(s)
		}
	}
	return s
}

// cmdAuditVerify checks the hash chain: exit status 0 when intact, 1 when
// a line was edited, removed, inserted or moved.
func cmdAuditVerify(ctx context.Context, e *env, args []string) error {
	fs := newFlags("collie audit verify", e)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	files, err := parseArgs(fs, args, 0, -1) // FILE arguments may stand among the flags
	if err != nil {
		return err
	}
	var rep audit.Report
	where, journalNote := "", ""
	if len(files) > 0 {
		rep, err = audit.VerifyFiles(files...)
		journalNote = "anchors not checked: files given on the command line are checked on their own"
	} else {
		paths, perr := e.paths()
		if perr != nil {
			return perr
		}
		where = paths.State
		rep, err = audit.Verify(where)
		if err == nil {
			anchors, jerr := journalAnchors(ctx, e.getenv, os.Getuid())
			if jerr != nil {
				journalNote = fmt.Sprintf("anchors not checked (%v); the log was checked on its own, which cannot show records removed from its end or the log rewritten with its hashes recomputed", jerr)
			} else {
				rep.CheckAnchors(where, anchors)
			}
		}
	}
	if err != nil {
		return err
	}
	if *asJSON {
		out := struct {
			Intact bool `json:"intact"`
			audit.Report
			AnchorsNote string `json:"anchorsNote,omitempty"`
		}{rep.Intact(), rep, journalNote}
		if out.Unfinished == nil {
			out.Unfinished = []audit.Problem{}
		}
		if out.Torn == nil {
			out.Torn = []audit.Problem{}
		}
		if out.Problems == nil {
			out.Problems = []audit.Problem{}
		}
		if out.Files == nil {
			out.Files = []string{}
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		printAuditReport(e.stdout, rep, where, journalNote)
	}
	if len(rep.Files) == 0 && where != "" && !*asJSON && rep.Intact() { // no log and no anchor says one was there: exit 0
		fmt.Fprintf(e.stdout, "no audit log at %s yet; nothing to verify\n", filepath.Join(where, audit.LogName))
	}
	if !rep.Intact() {
		first := rep.Problems[0]
		const keep = "keep a copy of it as evidence and compare it with a backup"
		if first.Line == 0 {
			return hint.New("the audit log does not hold records the journal anchored: it was truncated or rewritten after they were written", keep)
		}
		return hint.Errorf(keep, "the audit log was changed after it was written, first at %s line %d", auditFile(first.File, where), first.Line)
	}
	return nil
}

// auditFile is a file of the report as the user knows it: its base name when
// it is in the state folder, else the path given.
func auditFile(path, stateDir string) string {
	if stateDir != "" && filepath.Dir(path) == stateDir {
		return filepath.Base(path)
	}
	return path
}

func printAuditReport(w io.Writer, rep audit.Report, where, journalNote string) {
	for _, p := range rep.Problems {
		if p.Line == 0 {
			fmt.Fprintf(w, "%s: %s\n", auditFile(p.File, where), p.What)
			continue
		}
		fmt.Fprintf(w, "%s line %d: %s\n", auditFile(p.File, where), p.Line, p.What)
	}
	if rep.More > 0 {
		fmt.Fprintf(w, "and %d more problems\n", rep.More)
	}
	for _, p := range rep.Torn {
		fmt.Fprintf(w, "note: %s line %d: %s\n", auditFile(p.File, where), p.Line, p.What)
	}
	for _, p := range rep.Unfinished {
		fmt.Fprintf(w, "note: %s line %d: %s\n", auditFile(p.File, where), p.Line, p.What)
	}
	if rep.ContinuesFrom != "" {
		fmt.Fprintf(w, "note: %s continues from a rotated file no longer kept; its first line's prev is %s\n", auditFile(rep.Files[0], where), rep.ContinuesFrom)
	}
	if len(rep.Files) == 0 {
		return
	}
	state := "intact"
	if !rep.Intact() {
		state = "tampered"
	}
	var names []string
	for _, f := range rep.Files {
		names = append(names, auditFile(f, where))
	}
	fmt.Fprintf(w, "%s: %d records in %s", state, rep.Records, strings.Join(names, ", "))
	if rep.Records > 0 {
		fmt.Fprintf(w, ", from %s to %s", rep.First.Local().Format("2006-01-02 15:04:05"), rep.Last.Local().Format("2006-01-02 15:04:05"))
	}
	fmt.Fprintf(w, "\nhead: %s\n", rep.Head)
	switch a := rep.Anchors; {
	case journalNote != "":
		fmt.Fprintf(w, "note: %s\n", journalNote)
	case a == nil:
	case a.Anchors == 0:
		fmt.Fprintf(w, "anchors: the journal holds none for this log yet (the daemon writes one every %d records and when it stops)\n", audit.DefaultAnchorEvery)
	default:
		fmt.Fprintf(w, "anchors: %d in the journal, %d found in the log", a.Anchors, a.Found)
		if a.RotatedAway > 0 {
			fmt.Fprintf(w, ", %d older than the files kept", a.RotatedAway)
		}
		if a.Newest != nil {
			fmt.Fprintf(w, "; %d records after the newest (of %s) are not anchored yet", a.Unanchored, a.Newest.Time.Local().Format("2006-01-02 15:04:05"))
		}
		fmt.Fprintln(w)
	}
}

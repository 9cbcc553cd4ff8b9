package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/audit"
	"github.com/rogpeppe/go-internal/txtar"
)

// TestAuditGoldenCopies keeps the logs in the audit scripts the same as
// the golden logs of internal/bridge/audit, which TestGolden pins byte for byte
// (A3, A4): the scripts read what the writer writes.
func TestAuditGoldenCopies(t *testing.T) {
	golden := map[string]string{"audit.log": "audit.log", "audit-masked.log": "audit-masked.log"}
	for _, script := range []string{"audit.txtar", "audit_verify.txtar"} {
		ar, err := txtar.ParseFile(filepath.Join("testdata", "script", script))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range ar.Files {
			src, ok := golden[f.Name]
			if !ok {
				continue
			}
			want, err := os.ReadFile(filepath.Join("..", "..", "internal", "bridge", "audit", "testdata", src))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(f.Data, want) {
				t.Errorf("%s: %s differs from internal/bridge/audit/testdata/%s; copy it over", script, f.Name, src)
			}
		}
	}
}

// TestAuditTableQuotes checks that the table quotes every string that
// could move the cursor or reorder text, whatever a refused request put
// in the log.
func TestAuditTableQuotes(t *testing.T) {
	rec := audit.Record{
		Time: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Session: "desk\x1b[2J", Device: "dev\u202e1", Event: "space.rename",
		Fields: []audit.Field{{Key: "space", Value: "s-1"}, {Key: "name", Value: "evil\rname"}, {Key: "result", Value: "refused"}, {Key: "reason", Value: "bad"}},
	}
	var b bytes.Buffer
	printAudit(&b, []audit.Record{rec})
	out := b.String()
	if strings.ContainsAny(out, "\x1b\u202e\r") {
		t.Errorf("the table holds a raw control or direction character:\n%q", out)
	}
	for _, want := range []string{`"desk\x1b[2J"`, `"dev\u202e1"`, `name="evil\rname"`, "refused", "space=s-1 name="} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %s:\n%s", want, out)
		}
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 12, 10, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"90m":                  now.Add(-90 * time.Minute),
		"7d":                   now.AddDate(0, 0, -7),
		"2026-12-01T10:00:00Z": time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
	} {
		if got, err := parseSince(in, now); err != nil || !got.Equal(want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"-1h", "x", "d", "-3d"} {
		if _, err := parseSince(bad, now); err == nil {
			t.Errorf("parseSince(%q) = nil error", bad)
		}
	}
}

// TestParseAnchors reads journalctl -o json as the daemon's anchors give
// it, and skips entries that are not anchors as anchorToJournal writes
// them: a field given twice (an array), a short head, no time (A1).
func TestParseAnchors(t *testing.T) {
	head := strings.Repeat("ab", 32)
	out := `{"MESSAGE":"audit log anchored","AUDIT_DIR":"/s/collie","AUDIT_HEAD":"` + head + `","AUDIT_TIME":"2026-12-01T10:00:13.75Z","__REALTIME_TIMESTAMP":"1796119213750000"}
{"AUDIT_DIR":["/s/collie","/x"],"AUDIT_HEAD":"` + head + `","AUDIT_TIME":"2026-12-01T10:00:13.75Z"}
{"AUDIT_DIR":"/s/collie","AUDIT_HEAD":"abc","AUDIT_TIME":"2026-12-01T10:00:13.75Z"}
{"AUDIT_DIR":"/s/collie","AUDIT_HEAD":"` + head + `"}
not json
`
	got := parseAnchors([]byte(out))
	want := audit.Anchor{Dir: "/s/collie", Head: head, Time: time.Date(2026, 12, 1, 10, 0, 13, 750e6, time.UTC), Logged: time.UnixMicro(1796119213750000)}
	if len(got) != 1 || got[0].Dir != want.Dir || got[0].Head != want.Head || !got[0].Time.Equal(want.Time) || !got[0].Logged.Equal(want.Logged) {
		t.Errorf("parseAnchors = %+v, want [%+v]", got, want)
	}
}

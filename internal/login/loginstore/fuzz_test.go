package loginstore

import (
	"bytes"
	"testing"
)

// FuzzParse: Parse never panics, and a record it accepts passes the
// session check and survives Encode and Parse again unchanged (R10).
func FuzzParse(f *testing.F) {
	f.Add(Encode(Record{Session: testSession, Service: "collie", APIBase: "https://b", UpdatedAt: "2026-12-02T18:00:00.000Z"}))
	f.Add([]byte(`{"schema":"raft-cli-agent-session.v1","token_type":"Bearer","access_token":"a","access_expires_at":"2026-12-02T19:00:00Z","refresh_token":"r","refresh_expires_at":"2026-12-02T19:00:00+01:00","service":"collie","api_base":"b","updated_at":"","x":[1,{"y":null}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, ok := Parse(data, "collie")
		if !ok {
			return
		}
		if err := r.Check(); err != nil {
			t.Fatalf("accepted a record that fails the check: %v", err)
		}
		enc := Encode(r)
		r2, ok := Parse(enc, "collie")
		if !ok || !equalRecord(r, r2) {
			t.Fatalf("the record does not survive Encode:\n%s", enc)
		}
		if !bytes.Equal(Encode(r2), enc) {
			t.Fatal("Encode is not stable")
		}
	})
}

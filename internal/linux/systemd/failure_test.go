package systemd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFailureFile_L4: the reason a service stopped is kept whole (0600,
// written by rename), read back, and removed once it is ready again; a
// file that is not a failure record is an error that says to remove it.
func TestFailureFile_L4(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	path := FailureFile(dir)
	if _, found, err := ReadFailure(path); found || err != nil {
		t.Fatalf("no file: found %v, err %v", found, err)
	}
	want := Failure{Time: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC), Starting: true, Message: `line 3: unknown setting "push.ntfy.topik"`, Hint: "fix it"}
	if err := WriteFailure(path, want); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("stat %v %v; want mode 0600", fi, err)
	}
	got, found, err := ReadFailure(path)
	if err != nil || !found || !got.Time.Equal(want.Time) || got.Starting != want.Starting || got.Message != want.Message || got.Hint != want.Hint {
		t.Fatalf("read %+v %v %v; want %+v", got, found, err, want)
	}
	if err := ClearFailure(path); err != nil {
		t.Fatal(err)
	}
	if err := ClearFailure(path); err != nil {
		t.Fatalf("clearing twice: %v", err)
	}
	for _, bad := range []string{"not json", `{"message":""}`, strings.Repeat("x", failureCap+1)} {
		os.WriteFile(path, []byte(bad), 0o600)
		if _, found, err := ReadFailure(path); found || err == nil || !strings.Contains(err.Error(), "remove it") {
			t.Errorf("%.20q: found %v, err %v; want an error that says to remove it", bad, found, err)
		}
	}
}

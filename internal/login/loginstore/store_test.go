package loginstore

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var testSession = Session{Schema, TokenType, "access-1", "2026-12-02T19:00:00Z", "refresh-1", nil}

// TestWriteFolders_R7: folders below SLOCK_HOME are made 0700, a wider one
// repaired, SLOCK_HOME itself neither made nor changed, the file 0600.
func TestWriteFolders_R7(t *testing.T) {
	env, _ := agentHome(t, "agent-1")
	if err := os.Chmod(env.Home, 0o751); err != nil {
		t.Fatal(err)
	}
	wide := filepath.Join(env.Home, "agents")
	if err := os.Mkdir(wide, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(wide, 0o777)
	if _, err := Write(env, "collie", testSession, "https://b", time.Now()); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(env.Home)
	if fi.Mode().Perm() != 0o751 {
		t.Errorf("SLOCK_HOME changed to %o", fi.Mode().Perm())
	}
	sameModesBelow(t, env)

	missing := env
	missing.Home = filepath.Join(t.TempDir(), "absent")
	if _, err := Write(missing, "collie", testSession, "https://b", time.Now()); err == nil {
		t.Fatal("Write made a missing SLOCK_HOME")
	}
	if _, err := os.Stat(missing.Home); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("SLOCK_HOME was made: %v", err)
	}
}

func sameModesBelow(t *testing.T, e Env) {
	t.Helper()
	path, _ := Path(e, "collie")
	want := map[string]os.FileMode{path: 0o600}
	for d := filepath.Dir(path); d != e.Home; d = filepath.Dir(d) {
		want[d] = 0o700
	}
	for p, m := range want {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != m {
			t.Errorf("%s has mode %o, want %o", p, fi.Mode().Perm(), m)
		}
	}
}

// TestWriteFailureKeepsOldSession_R7: a write that fails halfway, or a
// rename that fails, leaves the old session byte-identical and no temp.
func TestWriteFailureKeepsOldSession_R7(t *testing.T) {
	env, _ := agentHome(t, "agent-1")
	path, err := Write(env, "collie", testSession, "https://b", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(path)
	next := testSession
	next.AccessToken = "access-2"
	_, err = writeWith(env, "collie", next, "https://b", time.Now(), func(w io.Writer, b []byte) error {
		w.Write(b[:10])
		return errors.New("disk full")
	})
	if err == nil {
		t.Fatal("a failed write reported success")
	}
	checkUnchanged(t, path, old)

	// A rename that fails: auth.json's folder holds a folder by that name.
	env2, _ := agentHome(t, "agent-2")
	p2, _ := Path(env2, "collie")
	if err := os.MkdirAll(filepath.Join(p2, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(env2, "collie", testSession, "https://b", time.Now()); err == nil {
		t.Fatal("a rename over a folder reported success")
	}
	checkUnchanged(t, filepath.Join(p2, "x"), nil)
}

func checkUnchanged(t *testing.T, path string, old []byte) {
	t.Helper()
	if old != nil {
		now, _ := os.ReadFile(path)
		if !bytes.Equal(now, old) {
			t.Fatalf("the old session changed:\n%s", now)
		}
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".auth.") {
			t.Fatalf("a temp was left: %s", e.Name())
		}
	}
}

// TestWriteTempName_R7: the temp is .auth.<16 hex>.tmp in the same folder,
// made O_EXCL 0600.
func TestWriteTempName_R7(t *testing.T) {
	env, _ := agentHome(t, "agent-1")
	var name string
	var mode os.FileMode
	_, err := writeWith(env, "collie", testSession, "https://b", time.Now(), func(w io.Writer, b []byte) error {
		f := w.(*os.File)
		name = f.Name()
		fi, _ := f.Stat()
		mode = fi.Mode().Perm()
		_, err := w.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := Path(env, "collie")
	base := filepath.Base(name)
	if filepath.Dir(name) != filepath.Dir(p) || len(base) != len(".auth.0123456789abcdef.tmp") ||
		!strings.HasPrefix(base, ".auth.") || !strings.HasSuffix(base, ".tmp") || strings.Trim(base[6:22], "0123456789abcdef") != "" {
		t.Fatalf("temp %s, want .auth.<16 hex>.tmp beside %s", name, p)
	}
	if mode != 0o600 {
		t.Fatalf("temp mode %o", mode)
	}
}

// TestWriteRefuses_R6_R7: a session that would not survive the trip, and a
// symbolic link below SLOCK_HOME, are refused; no error names a token.
func TestWriteRefuses_R6_R7(t *testing.T) {
	env, _ := agentHome(t, "agent-1")
	bad := map[string]Session{
		"schema":           {"x", TokenType, "a", "2026-12-02T19:00:00Z", "r", nil},
		"token_type":       {Schema, "bearer", "a", "2026-12-02T19:00:00Z", "r", nil},
		"empty_access":     {Schema, TokenType, "", "2026-12-02T19:00:00Z", "r", nil},
		"space_in_refresh": {Schema, TokenType, "a", "2026-12-02T19:00:00Z", "SECRET r", nil},
		"u2028_in_access":  {Schema, TokenType, "SECRET\u2028", "2026-12-02T19:00:00Z", "r", nil},
		"bad_expiry":       {Schema, TokenType, "a", "tomorrow", "r", nil},
		"bad_refresh_exp":  {Schema, TokenType, "a", "2026-12-02T19:00:00Z", "r", ptr("")},
	}
	for name, s := range bad {
		if _, err := Write(env, "collie", s, "https://b", time.Now()); err == nil || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%s: Write = %v", name, err)
		}
	}
	if _, err := Write(env, "collie", testSession, "", time.Now()); err == nil {
		t.Error("Write accepted an empty api_base")
	}
	env2, _ := agentHome(t, "agent-2")
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(env2.Home, "agents")); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(env2, "collie", testSession, "https://b", time.Now()); err == nil {
		t.Fatal("Write followed a link below SLOCK_HOME")
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Fatal("Write wrote through the link")
	}
}

// TestReadNone_R10: what Read returns none for, each case.
func TestReadNone_R10(t *testing.T) {
	good := string(Encode(Record{Session: testSession, Service: "collie", APIBase: "https://b", UpdatedAt: "2026-12-02T18:00:00.000Z"}))
	if _, ok := Parse([]byte(good), "collie"); !ok {
		t.Fatal("Parse refused a good record")
	}
	cases := map[string]string{
		"empty":             "",
		"null":              "null",
		"array":             "[]",
		"bom":               "\ufeff" + good,
		"other_service":     strings.Replace(good, `"service": "collie"`, `"service": "hands"`, 1),
		"no_service":        strings.Replace(good, `"service": "collie",`, ``, 1),
		"no_refresh_exp":    strings.Replace(good, `"refresh_expires_at": null,`, ``, 1),
		"refresh_exp_num":   strings.Replace(good, `"refresh_expires_at": null`, `"refresh_expires_at": 5`, 1),
		"duplicate":         strings.Replace(good, `"schema"`, `"access_token": "x", "schema"`, 1),
		"bad_utf8":          strings.Replace(good, `2026-12-02T18:00:00.000Z`, "\xff", 1),
		"schema_v2":         strings.Replace(good, ".v1", ".v2", 1),
		"empty_token":       strings.Replace(good, `"access-1"`, `""`, 1),
		"token_number":      strings.Replace(good, `"access-1"`, `1`, 1),
		"bad_access_expiry": strings.Replace(good, `"2026-12-02T19:00:00Z"`, `"soon"`, 1),
		"empty_api_base":    strings.Replace(good, `"https://b"`, `""`, 1),
		"no_updated_at": strings.Replace(good, `,
  "updated_at": "2026-12-02T18:00:00.000Z"`, ``, 1),
		"trailing": good + "{}",
	}
	for name, data := range cases {
		if data == good {
			t.Fatalf("%s: the case did not change the record", name)
		}
		if r, ok := Parse([]byte(data), "collie"); ok {
			t.Errorf("%s: Parse accepted %+v", name, r)
		}
	}
}

// TestReadFile_R7: a link, a folder, a file over 64 KiB and no file read
// as none; the file itself as its record.
func TestReadFile_R7(t *testing.T) {
	env, _ := agentHome(t, "agent-1")
	if _, ok := Read(env, "collie"); ok {
		t.Fatal("Read found a session in an empty home")
	}
	path, err := Write(env, "collie", testSession, "https://b", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := Read(env, "collie"); !ok || r.Session.AccessToken != "access-1" {
		t.Fatalf("Read = %+v %v", r, ok)
	}
	data, _ := os.ReadFile(path)
	big := append(bytes.TrimRight(data, "}\n"), []byte(`, "pad": "`+strings.Repeat("x", MaxFile)+`"}`)...)
	os.WriteFile(path, big, 0o600)
	if _, ok := Read(env, "collie"); ok {
		t.Fatal("Read accepted a file over 64 KiB")
	}
	other := filepath.Join(t.TempDir(), "auth.json")
	os.WriteFile(other, data, 0o600)
	os.Remove(path)
	if err := os.Symlink(other, path); err != nil {
		t.Fatal(err)
	}
	if _, ok := Read(env, "collie"); ok {
		t.Fatal("Read followed a link")
	}
	if _, ok := Read(env, "Collie"); ok {
		t.Fatal("Read accepted a bad slug")
	}
}

// TestRemove_R7: Remove takes auth.json and nothing else.
func TestRemove_R7(t *testing.T) {
	env, _ := agentHome(t, "agent-1")
	path, _ := Write(env, "collie", testSession, "https://b", time.Now())
	lock := filepath.Join(filepath.Dir(path), "refresh.lock")
	os.WriteFile(lock, nil, 0o600)
	if had, err := Remove(env, "collie"); !had || err != nil {
		t.Fatalf("Remove = %v %v", had, err)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatal("Remove took the lock file too")
	}
	if had, err := Remove(env, "collie"); had || err != nil {
		t.Fatalf("Remove again = %v %v", had, err)
	}
}

// TestISOTime_R10: toISOString's form.
func TestISOTime_R10(t *testing.T) {
	tm := time.Date(2026, 12, 2, 19, 4, 5, 7_000_000, time.FixedZone("x", 3600))
	if got := ISOTime(tm); got != "2026-12-02T18:04:05.007Z" {
		t.Fatal(got)
	}
}

package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// leaf is one setting of config.toml: its table and its key.
type leaf struct {
	table []string
	key   string
	typ   reflect.Type
}

// leaves lists every setting of t, a struct of config.toml, from its tags.
func leaves(t reflect.Type, table []string) []leaf {
	var out []leaf
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			out = append(out, leaves(ft, append(append([]string(nil), table...), name))...)
			continue
		}
		out = append(out, leaf{table: table, key: name, typ: ft})
	}
	return out
}

// wrong is a value of another TOML type than t takes.
func wrong(t reflect.Type) string {
	if t.Kind() == reflect.String {
		return "8780"
	}
	return `"8780"`
}

// TestLoadTypeErrorEverySetting_L4: every setting of config.toml given a
// value of the wrong type (listen = 8780) is a sentence naming the file,
// the line, the setting, the type it takes and an example, never go-toml's
// Go decoding error ("cannot decode TOML integer into struct field
// config.Devices.Listen of type string").
func TestLoadTypeErrorEverySetting_L4(t *testing.T) {
	all := leaves(reflect.TypeFor[File](), nil)
	if len(all) < 10 {
		t.Fatalf("found %d settings; the walk over File is broken", len(all))
	}
	for _, l := range all {
		setting := strings.Join(append(append([]string(nil), l.table...), l.key), ".")
		t.Run(setting, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.toml")
			body := "# a comment\n[" + strings.Join(l.table, ".") + "]\n" + l.key + " = " + wrong(l.typ) + "\n"
			if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err := Load(path)
			if err == nil {
				t.Fatalf("%q accepted", body)
			}
			msg := err.Error()
			for _, want := range []string{path + ", line 3: setting \"" + setting + "\" is ", ", but it takes ", ", such as " + l.key + " = ", "; see collie.toml(5)"} {
				if !strings.Contains(msg, want) {
					t.Errorf("%q: %s\nwant it to say %q", body, msg, want)
				}
			}
			for _, bad := range []string{"toml:", "struct field", "decode", "of type", "config.Devices", "config.Push", "config.Ntfy", "config.Agents"} {
				if strings.Contains(msg, bad) {
					t.Errorf("%q: %s\nsays %q, Go's words", body, msg, bad)
				}
			}
		})
	}
}

// TestLoadListenNumber_L4 is the case a newcomer met: listen = 8780.
func TestLoadListenNumber_L4(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(path, []byte("[devices]\nlisten = 8780\n"), 0o600)
	_, _, err := Load(path)
	want := path + `, line 2: setting "devices.listen" is a whole number, but it takes text in quotes, such as listen = "127.0.0.1:8780"; see collie.toml(5)`
	if err == nil || err.Error() != want {
		t.Errorf("err %v;\nwant %s", err, want)
	}
}

package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestConfigTypeErrorEverySetting_L4: every setting of collie-agent's
// config given a value of the wrong type is a sentence naming the file,
// the line, the setting, the type it takes and an example, never go-toml's
// Go decoding error.
func TestConfigTypeErrorEverySetting_L4(t *testing.T) {
	type leaf struct {
		header, key string // header is "[t]", "[[t]]" or ""
		setting     string
		typ         reflect.Type
	}
	var all []leaf
	ct := reflect.TypeFor[Config]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		header, sub := "", ft
		switch {
		case ft.Kind() == reflect.Struct:
			header = "[" + name + "]"
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			header, sub = "[["+name+"]]", ft.Elem()
		default:
			all = append(all, leaf{key: name, setting: name, typ: ft})
			continue
		}
		for j := range sub.NumField() {
			g := sub.Field(j)
			if !g.IsExported() {
				continue
			}
			gn, _, _ := strings.Cut(g.Tag.Get("toml"), ",")
			all = append(all, leaf{header: header, key: gn, setting: name + "." + gn, typ: g.Type})
		}
	}
	if len(all) < 15 {
		t.Fatalf("found %d settings; the walk over Config is broken", len(all))
	}
	for _, l := range all {
		t.Run(l.setting, func(t *testing.T) {
			value := `"8780"`
			if l.typ.Kind() == reflect.String {
				value = "8780"
			}
			body := "# a comment\n" + l.header + "\n" + l.key + " = " + value + "\n"
			path := filepath.Join(t.TempDir(), "demo.toml")
			if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := loadConfig(path, "demo")
			if err == nil {
				t.Fatalf("%q accepted", body)
			}
			msg := err.Error()
			for _, want := range []string{path + ", line 3: setting \"" + l.setting + "\" is ", ", but it takes ", ", such as " + l.key + " = ", "; fix the file (see collie-agent(1))"} {
				if !strings.Contains(msg, want) {
					t.Errorf("%q: %s\nwant it to say %q", body, msg, want)
				}
			}
			for _, bad := range []string{"toml:", "struct field", "decode", "of type", "main."} {
				if strings.Contains(msg, bad) {
					t.Errorf("%q: %s\nsays %q, Go's words", body, msg, bad)
				}
			}
			if strings.Contains(msg, "8780") {
				t.Errorf("%q: %s\nechoes the value (it may be a token)", body, msg)
			}
		})
	}
}

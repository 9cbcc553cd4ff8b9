package config

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// settings lists every setting a config struct accepts, grouped by the
// table that holds it ("devices", "push.ntfy"), from its toml tags: what
// the strict parser takes.
func settings(t reflect.Type, table string, out map[string][]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			sub := name
			if table != "" {
				sub = table + "." + name
			}
			settings(ft, sub, out)
			continue
		}
		out[table] = append(out[table], name)
	}
}

// TestSettingsDocumented: every setting config.toml accepts is explained
// in collie.toml(5), as **name** in the section of its table; a setting
// the parser takes that the man page does not explain is one a user
// cannot find.
func TestSettingsDocumented(t *testing.T) {
	data, err := os.ReadFile("../../../man/collie.toml.5.md")
	if err != nil {
		t.Fatal(err)
	}
	// The man page's sections, by their [table] headings.
	sections := map[string]string{}
	heading := regexp.MustCompile(`(?m)^\[([a-z_.]+)\]\n-+\n`)
	idx := heading.FindAllStringSubmatchIndex(string(data), -1)
	for i, m := range idx {
		end := len(data)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		sections[string(data[m[2]:m[3]])] = string(data[m[1]:end])
	}
	accepted := map[string][]string{}
	settings(reflect.TypeFor[File](), "", accepted)
	if len(accepted["devices"]) == 0 || len(accepted["push.ntfy"]) == 0 {
		t.Fatalf("the struct walk found %v", accepted)
	}
	for table, names := range accepted {
		text, ok := sections[table]
		if !ok {
			t.Errorf("collie.toml(5) has no [%s] section, but config.toml accepts %v there", table, names)
			continue
		}
		for _, name := range names {
			if !strings.Contains(text, "**"+name+"**") {
				t.Errorf("config.toml accepts [%s] %s, but collie.toml(5) does not explain it (as **%s** in its [%s] section)", table, name, name, table)
			}
		}
	}
}

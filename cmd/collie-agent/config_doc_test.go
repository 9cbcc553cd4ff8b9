package main

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// tomlKeys lists every setting a config struct accepts, as TABLE.KEY (KEY
// at the top level), from its toml tags: what the strict parser takes.
func tomlKeys(t reflect.Type, table string) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	var keys []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			keys = append(keys, tomlKeys(ft, name)...)
			continue
		}
		if table != "" {
			name = table + "." + name
		}
		keys = append(keys, name)
	}
	return keys
}

// documentedKeys lists the settings the example in a man page's
// CONFIGURATION section shows (commented-out ones too), as TABLE.KEY.
func documentedKeys(t *testing.T, man string) []string {
	t.Helper()
	_, section, ok := strings.Cut(man, "\nCONFIGURATION\n")
	if !ok {
		t.Fatal("the man page has no CONFIGURATION section")
	}
	header := regexp.MustCompile(`^    \[\[?([A-Za-z_]+)\]\]?`)
	setting := regexp.MustCompile(`^    (?:# )?([A-Za-z_]+) += `)
	table := ""
	var keys []string
	for _, line := range strings.Split(section, "\n") {
		if m := header.FindStringSubmatch(line); m != nil {
			table = m[1]
		} else if m := setting.FindStringSubmatch(line); m != nil {
			if table != "" {
				m[1] = table + "." + m[1]
			}
			keys = append(keys, m[1])
		}
	}
	return keys
}

// TestConfigSettingsDocumented: every setting collie-agent's config file
// accepts is in collie-agent(1)'s example, and the example shows no
// setting the parser refuses. [https]'s listen, cert, key, token and
// token_next were once accepted and documented nowhere.
func TestConfigSettingsDocumented(t *testing.T) {
	man, err := os.ReadFile("../../man/collie-agent.1.md")
	if err != nil {
		t.Fatal(err)
	}
	accepted := tomlKeys(reflect.TypeFor[Config](), "")
	documented := documentedKeys(t, string(man))
	if !slices.Contains(accepted, "https.token_next") {
		t.Fatalf("the struct walk missed [https]: %v", accepted)
	}
	for _, k := range accepted {
		if !slices.Contains(documented, k) {
			t.Errorf("collie-agent accepts the setting %s, but collie-agent(1)'s CONFIGURATION example does not show it", k)
		}
	}
	for _, k := range documented {
		if !slices.Contains(accepted, k) {
			t.Errorf("collie-agent(1)'s CONFIGURATION example shows %s, which collie-agent refuses", k)
		}
	}
	// Each [https] setting is also explained, by name, in the prose.
	for _, k := range accepted {
		if name, ok := strings.CutPrefix(k, "https."); ok && !strings.Contains(string(man), "**"+name+"**") {
			t.Errorf("collie-agent(1) does not explain [https] %s (as **%s**)", name, name)
		}
	}
}

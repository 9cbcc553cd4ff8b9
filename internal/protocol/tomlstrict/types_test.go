package tomlstrict

import (
	"errors"
	"strings"
	"testing"
)

type typed struct {
	Name    string   `toml:"name" example:"\"demo\""`
	Port    int      `toml:"port"`
	Ratio   float64  `toml:"ratio"`
	On      *bool    `toml:"on"`
	Tags    []string `toml:"tags"`
	Belt    []cmd    `toml:"belt"`
	Devices sub      `toml:"devices"`
	Opt     *sub     `toml:"opt"`
	Any     any      `toml:"any"`
}

// TestDecodeTypeError_L4: a value of another type than its setting takes
// is a sentence naming the line, the setting, what it is, what it takes
// and an example (go-toml says "cannot decode TOML integer into struct
// field ... of type string").
func TestDecodeTypeError_L4(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"number_for_text", "name = 8780\n", `line 1: setting "name" is a whole number, but it takes text in quotes, such as name = "demo"`},
		{"text_for_number", "\nport = \"80\"\n", `line 2: setting "port" is text, but it takes a whole number, such as port = 10`},
		{"text_for_bool", "on = \"yes\"\n", `line 1: setting "on" is text, but it takes true or false, such as on = true`},
		{"bool_for_float", "ratio = true\n", `line 1: setting "ratio" is true or false, but it takes a number, such as ratio = 1.5`},
		{"text_for_list", "tags = \"a\"\n", `line 1: setting "tags" is text, but it takes a list of texts in quotes, such as tags = ["text", "text"]`},
		{"list_with_number", "tags = [\"a\", 1]\n", `line 1: setting "tags" is a list with a whole number in it, but it takes a list of texts in quotes`},
		{"table_key_in_table", "[devices]\nlisten = 8780\n", `line 2: setting "devices.listen" is a whole number, but it takes text in quotes, such as listen = "text"`},
		{"dotted_key", "devices.tls = false\n", `line 1: setting "devices.tls" is true or false, but it takes text in quotes`},
		{"inline_table_value", "devices = { listen = 1 }\n", `line 1: setting "devices.listen" is a whole number`},
		{"text_for_table", "devices = \"on\"\n", `line 1: setting "devices" is text, but it takes a table, such as [devices] with its settings on the lines below`},
		{"header_for_text", "[name]\n", `line 1: setting "name" is a table, but it takes text in quotes, such as name = "text"`},
		{"array_table_for_table", "[[devices]]\n", `line 1: setting "devices" is a list of tables, but it takes a table`},
		{"table_for_array_table", "[belt]\n", `line 1: setting "belt" is a table, but it takes a list of tables, such as [[belt]]`},
		{"number_in_array_table", "[[belt]]\nid = 3\n", `line 2: setting "belt.id" is a whole number, but it takes text in quotes`},
		{"number_in_inline_array", "belt = [{ id = 3 }]\n", `line 1: setting "belt.id" is a whole number`},
		{"pointer_table", "[opt]\ntls = 1\n", `line 2: setting "opt.tls" is a whole number`},
		{"date_for_text", "name = 2026-12-01\n", `line 1: setting "name" is a date or time, but it takes text in quotes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v typed
			err := Decode([]byte(tc.data), &v)
			var te *TypeError
			if !errors.As(err, &te) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("Decode(%q) = %v; want a TypeError %q", tc.data, err, tc.want)
			}
		})
	}
	for _, ok := range []string{"name = \"x\"\nport = 1\nratio = 2\non = true\ntags = [\"a\"]\nany = 3\n", "[[belt]]\nid = \"a\"\n[opt]\ntls = \"on\"\n", "any = { x = 1 }\n"} {
		var v typed
		if err := Decode([]byte(ok), &v); err != nil {
			t.Errorf("Decode(%q) = %v", ok, err)
		}
	}
}

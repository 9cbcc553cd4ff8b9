package tomlstrict

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

type cmd struct {
	ID      string   `toml:"id"`
	Command []string `toml:"command"`
}

type sub struct {
	Listen *string `toml:"listen"`
	TLS    string  `toml:"tls"`
}

type cfg struct {
	Title       string            `toml:"title"`
	CallerCheck string            `toml:"CallerCheck"`
	Devices     sub               `toml:"devices"`
	Opt         *sub              `toml:"opt"`
	Belt        []cmd             `toml:"belt"`
	Env         map[string]string `toml:"env"`
	Plain       string
}

func TestDecodeExactCase(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		line       int
		key, want  string
	}{
		{"table_key", "[devices]\nListen = \"0.0.0.0:1\"\n", 2, "devices.Listen", "listen"},
		{"table_name", "[Devices]\nlisten = \"x\"\n", 1, "Devices", "devices"},
		{"dotted_key", "title = \"t\"\ndevices.TLS = \"off\"\n", 2, "devices.TLS", "tls"},
		{"dotted_table", "[devices.Tls]\n", 1, "devices.Tls", "tls"},
		{"inline_table", "devices = { listen = \"x\", Tls = \"on\" }\n", 1, "devices.Tls", "tls"},
		{"pointer_table", "[opt]\nLISTEN = \"x\"\n", 2, "opt.LISTEN", "listen"},
		{"camel_case_key_lowered", "callercheck = \"off\"\n", 1, "callercheck", "CallerCheck"},
		{"array_table_name", "[[Belt]]\nid = \"a\"\n", 1, "Belt", "belt"},
		{"array_table_key", "[[belt]]\nid = \"a\"\n[[belt]]\nID = \"b\"\n", 4, "belt.ID", "id"},
		{"array_of_inline_tables", "belt = [{ id = \"a\" }, { Id = \"b\" }]\n", 1, "belt.Id", "id"},
		{"untagged_field", "plain = \"x\"\n", 1, "plain", "Plain"},
		{"quoted_key", "\"Title\" = \"x\"\n", 1, "Title", "title"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c cfg
			err := Decode([]byte(tc.data), &c)
			var ce *CaseError
			if !errors.As(err, &ce) {
				t.Fatalf("Decode(%q) = %v, want a CaseError", tc.data, err)
			}
			if ce.Line != tc.line || strings.Join(ce.Key, ".") != tc.key || ce.Want != tc.want {
				t.Fatalf("got line %d key %q want %q; want line %d key %q want %q", ce.Line, ce.Key, ce.Want, tc.line, tc.key, tc.want)
			}
			for _, b := range []byte(err.Error()) {
				if b < 0x20 || b > 0x7e {
					t.Fatalf("message %q is not printable ASCII", err)
				}
			}
		})
	}
}

func TestDecodeAccepts(t *testing.T) {
	data := `title = "T"
CallerCheck = "off"
Plain = "p"
env = { Foo = "1", foo = "2" }
[devices]
listen = "127.0.0.1:1"
tls = "on"
[opt]
tls = "off"
[[belt]]
id = "a"
command = ["/bin/true"]
[[belt]]
id = "b"
`
	var c cfg
	if err := Decode([]byte(data), &c); err != nil {
		t.Fatal(err)
	}
	if c.Title != "T" || c.CallerCheck != "off" || *c.Devices.Listen != "127.0.0.1:1" || c.Opt.TLS != "off" || len(c.Belt) != 2 || c.Belt[1].ID != "b" || c.Env["Foo"] != "1" || c.Plain != "p" {
		t.Fatalf("decoded %+v", c)
	}
}

// TestDecodeTwiceAndUnknown: TOML forbids a key or table given twice, and
// go-toml refuses it; an unknown key is refused too.
func TestDecodeTwiceAndUnknown(t *testing.T) {
	for _, tc := range []struct{ name, data string }{
		{"key_twice", "title = \"a\"\ntitle = \"b\"\n"},
		{"table_twice", "[devices]\nlisten = \"a\"\n[devices]\ntls = \"on\"\n"},
		{"key_twice_in_table", "[devices]\nlisten = \"a\"\nlisten = \"b\"\n"},
		{"dotted_then_table", "devices.listen = \"a\"\n[devices]\nlisten = \"b\"\n"},
		{"inline_twice", "devices = { listen = \"a\", listen = \"b\" }\n"},
		{"quoted_same_key", "title = \"a\"\n\"title\" = \"b\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c cfg
			err := Decode([]byte(tc.data), &c)
			var de *toml.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Decode(%q) = %v, want a DecodeError", tc.data, err)
			}
		})
	}
	var c cfg
	var sm *toml.StrictMissingError
	if err := Decode([]byte("[devices]\nport = 1\n"), &c); !errors.As(err, &sm) {
		t.Fatalf("an unknown key: %v, want a StrictMissingError", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{"[devices]\nListen = \"x\"\n", "belt = [{ Id = \"b\" }]\n", "[[belt]]\nid = \"a\"\n", "title = \"a\"\ntitle = \"b\"\n", "a.b.c = 1\n", "[x]\n[[x]]\n", "[devices]\nlisten = 8780\n", "[[devices]]\n", "belt = [{ id = 3 }]\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c cfg
		err := Decode(data, &c)
		var ce *CaseError
		var te *TypeError
		if errors.As(err, &ce) || errors.As(err, &te) {
			for _, b := range []byte(err.Error()) {
				if b < 0x20 || b > 0x7e {
					t.Fatalf("message %q is not printable ASCII", err)
				}
			}
			return
		}
		if err != nil {
			return
		}
		// Accepted: every key is in its exact case, so decoding into a map
		// and looking each key up exactly finds the same values.
		var m map[string]any
		if err := toml.Unmarshal(data, &m); err != nil {
			t.Fatalf("accepted %q, which go-toml cannot read as a map: %v", data, err)
		}
		for k := range m {
			if _, _, _, found := field(cfgType, k); !found {
				t.Fatalf("accepted %q with key %q", data, k)
			}
			if _, want, _, _ := field(cfgType, k); want != k {
				t.Fatalf("accepted %q with key %q in another case than %q", data, k, want)
			}
		}
	})
}

var cfgType = reflect.TypeOf(cfg{})

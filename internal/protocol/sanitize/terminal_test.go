package sanitize

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// refTerminal restates Terminal's rule rune by rune, sharing no code with it.
func refTerminal(s string, multiline bool) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case multiline && (r == '\n' || r == '\t'):
		case r < 0x20, r >= 0x7F && r <= 0x9F, r == 0x2028, r == 0x2029,
			unicode.Is(unicode.Cf, r), refInvisible(r):
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func TestTerminal(t *testing.T) {
	cases := []struct {
		name, in, block, line string
	}{
		{"X1_clean_ascii", "hello world", "hello world", "hello world"},
		{"X1_osc_title", "200 \x1b]0;pwned\x07ok", "200 ]0;pwnedok", "200 ]0;pwnedok"},
		{"X1_csi_clear", "\x1b[2J\x1b[Hgone", "[2J[Hgone", "[2J[Hgone"},
		{"X1_c1_csi", "a\u009b31mb", "a31mb", "a31mb"},
		{"X1_del", "a\x7fb", "ab", "ab"},
		{"X1_cr_hides_line", "safe\rEVIL", "safeEVIL", "safeEVIL"},
		{"X1_newline_tab", "a\nb\tc", "a\nb\tc", "abc"},
		{"X2_bidi", "abc\u202edcb\u2066x\u2069", "abcdcbx", "abcdcbx"},
		{"X2_tags", "ok\U000E0041\U000E0042\U000E007F", "ok", "ok"},
		{"X2_zero_width_bom", "a\u200bb\ufeffc\u2060", "abc", "abc"},
		{"X1_other_format", "soft\u00adhy\u2061phen\ufff9", "softhyphen", "softhyphen"},
		{"X1_line_separators", "a\u2028b\u2029c", "abc", "abc"},
		{"X1_invalid_utf8", "a\xff\xfeb", "a\uFFFDb", "a\uFFFDb"},
		{"X1_keeps_letters", "Grüße 日本 ✓ 🐕", "Grüße 日本 ✓ 🐕", "Grüße 日本 ✓ 🐕"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Terminal(c.in); got != c.block {
				t.Errorf("Terminal(%q) = %q, want %q", c.in, got, c.block)
			}
			if got := TerminalLine(c.in); got != c.line {
				t.Errorf("TerminalLine(%q) = %q, want %q", c.in, got, c.line)
			}
		})
	}
}

func TestTerminalJSON(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"X1_bidi_escaped", "\u202eabc", `"\u202eabc"`},
		{"X1_tag_surrogates", "a\U000E0041", `"a\udb40\udc41"`},
		{"X1_del_escaped", "a\x7f", `"a\u007f"`},
		{"X1_c1_escaped", "\u009b", `"\u009b"`},
		{"X1_esc_by_encoding_json", "\x1b]0;x\x07", `"\u001b]0;x\u0007"`},
		{"X1_clean_unchanged", "Grüße", `"Grüße"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			enc, err := json.Marshal(c.in)
			if err != nil {
				t.Fatal(err)
			}
			got := TerminalJSON(enc)
			if string(got) != c.want {
				t.Fatalf("TerminalJSON(%s) = %s, want %s", enc, got, c.want)
			}
			var back string
			if err := json.Unmarshal(got, &back); err != nil || back != c.in {
				t.Fatalf("decodes to %q, %v; want %q", back, err, c.in)
			}
		})
	}
}

// TestTerminalWriter writes through the writer one byte at a time, so every
// multi-byte character is split, and checks the result is the whole text
// cleaned at once.
func TestTerminalWriter(t *testing.T) {
	in := "ok \u202e\x1b[31m日本\U000E0041🐕\n\tend\xff"
	var out bytes.Buffer
	w := NewTerminalWriter(&out)
	for i := range len(in) {
		if n, err := w.Write([]byte{in[i]}); n != 1 || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := Terminal(in); out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}

func FuzzTerminal(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b]0;t\x07", "a\u202eb", "\U000E0041", "\xff\xfe", "a\nb\r\n\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, multi := range []bool{true, false} {
			got := TerminalLine(s)
			if multi {
				got = Terminal(s)
			}
			if want := refTerminal(s, multi); got != want {
				t.Fatalf("multiline=%v: %q -> %q, want %q", multi, s, got, want)
			}
			if !utf8.ValidString(got) {
				t.Fatalf("invalid UTF-8 out of %q", s)
			}
		}
	})
}

func FuzzTerminalJSON(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b]0;t\x07", "a\u202eb", "\U000E0041", "\xff\xfe", "\x7f\u009b\u00ad"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc, _ := json.Marshal(map[string]string{s: s})
		got := TerminalJSON(enc)
		var back, want map[string]string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%s is not JSON: %v", got, err)
		}
		json.Unmarshal(enc, &want)
		for k, v := range want {
			if back[k] != v {
				t.Fatalf("%q changed to %q", v, back[k])
			}
		}
		if Terminal(string(got)) != string(got) {
			t.Fatalf("%q still holds what a terminal must not see", got)
		}
	})
}

func BenchmarkTerminal(b *testing.B) {
	for _, c := range []struct{ name, s string }{
		{"clean_ascii", strings.Repeat("the agent answered 503 Service Unavailable ", 8)},
		{"hostile", strings.Repeat("x\x1b]0;pwned\x07\u202e\U000E0041 ", 16)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.s)))
			b.ReportAllocs()
			for b.Loop() {
				Terminal(c.s)
			}
		})
	}
}

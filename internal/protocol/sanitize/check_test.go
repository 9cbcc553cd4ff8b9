package sanitize

import (
	"strings"
	"testing"
)

func TestValidID(t *testing.T) {
	for _, tc := range []struct {
		name string
		id   string
		want bool
	}{
		{"X5_plain", "conv-42", true},
		{"X5_punctuation", "a.b_c:d@e~f+g=h", true},
		{"X5_multibyte", "tâche-日本-😀", true},
		{"X5_one_byte", "x", true},
		{"X5_128_bytes", strings.Repeat("a", 128), true},
		{"X5_128_bytes_multibyte", strings.Repeat("é", 64), true},
		{"X5_empty", "", false},
		{"X5_129_bytes", strings.Repeat("a", 129), false},
		{"X5_129_bytes_multibyte", strings.Repeat("é", 64) + "a", false},
		{"X5_space", "a b", false},
		{"X5_slash", "a/b", false},
		{"X5_dot_dot_slash", "../etc", false},
		{"X5_question", "a?b", false},
		{"X5_hash", "a#b", false},
		{"X5_control_NUL", "a\x00b", false},
		{"X5_control_newline", "a\n", false},
		{"X5_control_tab", "\ta", false},
		{"X5_DEL", "a\x7f", false},
		{"X5_C1", "a\u0085", false},
		{"X5_C1_CSI", "a\u009b", false},
		{"X5_NBSP_U+00A0", "a\u00a0b", false},
		{"X5_ideographic_space", "a\u3000b", false},
		{"X5_line_separator", "a\u2028b", false},
		{"X5_ZWSP", "a\u200bb", false},
		{"X5_bidi_override", "a\u202Eb", false},
		{"X5_tag_char", "a\U000E0041", false},
		{"X5_BOM", "\uFEFFa", false},
		{"X5_invalid_UTF8", "a\xff", false},
		{"X5_truncated_UTF8", "a\xe2\x80", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ValidID(tc.id); got != tc.want {
				t.Errorf("ValidID(%q) = %v, want %v", tc.id, got, tc.want)
			}
		})
	}
}

func TestCheckLink(t *testing.T) {
	long := "https://example.com/" + strings.Repeat("a", LinkMaxChars-len("https://example.com/"))
	longRunes := "https://example.com/" + strings.Repeat("é", LinkMaxChars-len("https://example.com/"))
	for _, tc := range []struct {
		name string
		link string
		want string // "" for a valid link, else the error message
	}{
		{"X6_valid", "https://example.com/path?q=1#frag", ""},
		{"X6_valid_port", "https://example.com:8443/", ""},
		{"X6_valid_IPv6", "https://[::1]/", ""},
		{"X6_valid_upper_scheme", "HTTPS://example.com", ""},
		{"X6_valid_IDN", "https://bücher.example/", ""},
		{"X6_2048_chars", long, ""},
		{"X6_2048_multibyte_chars", longRunes, ""},
		{"X6_2049_chars", long + "a", "link is longer than 2048 characters"},
		{"X6_2049_multibyte_chars", longRunes + "é", "link is longer than 2048 characters"},
		{"X6_http", "http://example.com/", "link is not https"},
		{"X6_javascript", "javascript:alert(1)", "link is not https"},
		{"X6_data", "data:text/html,<script>", "link is not https"},
		{"X6_no_scheme", "//example.com/", "link is not https"},
		{"X6_empty", "", "link is not https"},
		{"X6_no_host", "https:///path", "link has no host"},
		{"X6_opaque_no_host", "https:example.com", "link has no host"},
		{"X6_port_only", "https://:443/", "link has no host"},
		{"X6_user_pass", "https://user:pass@example.com/", "link contains a user name or password"},
		{"X6_user", "https://user@example.com/", "link contains a user name or password"},
		{"X6_empty_user", "https://@example.com/", "link contains a user name or password"},
		{"X6_space", "https://example.com/a b", "link contains a space"},
		{"X6_NBSP", "https://example.com/a\u00a0b", "link contains a space"},
		{"X6_control", "https://example.com/\x00", "link contains a control character"},
		{"X6_newline", "https://example.com/\n", "link contains a control character"},
		{"X6_C1", "https://example.com/\u009b", "link contains a control character"},
		{"X6_bidi_U+202E", "https://example.com/\u202Etxt.exe", "link contains an invisible or direction character"},
		{"X6_ZWSP_in_host", "https://exa\u200bmple.com/", "link contains an invisible or direction character"},
		{"X6_invalid_UTF8", "https://example.com/\xff", "link is not valid UTF-8"},
		{"X6_bad_escape", "https://example.com/%zz", "link is not a valid URL"},
		{"X6_backslash_host", "https://good.com\\.evil.com/", "link is not a valid URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckLink(tc.link)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("CheckLink(%.40q) = %q, want %q", tc.link, got, tc.want)
			}
		})
	}
}

func TestCheckSend(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want string
	}{
		{"X4_one_byte", "y", ""},
		{"X4_32768_bytes", strings.Repeat("a", SendMaxBytes), ""},
		{"X4_multibyte", "Grüße 😀", ""},
		{"X4_newlines_are_fine", "line 1\nline 2", ""},
		{"X4_empty", "", "the text is empty; type at least one character"},
		{"X4_32769_bytes", strings.Repeat("a", SendMaxBytes+1), "the text is 32769 bytes; the limit is 32768"},
		{"X4_40000_bytes", strings.Repeat("a", 40000), "the text is 40000 bytes; the limit is 32768"},
		{"X4_invalid_UTF8", "a\xff", "the text is not valid UTF-8; paste it again as plain text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckSend(tc.text)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("CheckSend(%.40q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

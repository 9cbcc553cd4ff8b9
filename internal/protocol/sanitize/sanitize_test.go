package sanitize

import (
	"strings"
	"testing"
	"unicode/utf8"
)

type cleanCase struct {
	name    string
	in      string
	limit   int
	want    string
	changed bool
}

func runClean(t *testing.T, fn func(string, int) (string, bool), cases []cleanCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := fn(tc.in, tc.limit)
			if got != tc.want || changed != tc.changed {
				t.Errorf("(%q, %d) = %q, %v; want %q, %v", tc.in, tc.limit, got, changed, tc.want, tc.changed)
			}
		})
	}
}

func TestLine(t *testing.T) {
	runClean(t, Line, []cleanCase{
		{"X3_clean_ASCII_unchanged", "Deploy to prod?", TitleBytes, "Deploy to prod?", false},
		{"X3_clean_multibyte_unchanged", "Déployer 日本 😀", TitleBytes, "Déployer 日本 😀", false},
		{"X3_empty", "", TitleBytes, "", false},
		{"X3_U+FFFD_in_input_is_text", "a\uFFFDb", TitleBytes, "a\uFFFDb", false},

		{"X2_0_invalid_byte", "a\xffb", TitleBytes, "a\uFFFDb", true},
		{"X2_0_invalid_run_is_one_U+FFFD", "a\xff\xfe\xfdb", TitleBytes, "a\uFFFDb", true},
		{"X2_0_truncated_sequence", "a\xe2\x80", TitleBytes, "a\uFFFD", true},
		{"X2_0_truncated_then_valid", "\xe2\x80€", TitleBytes, "\uFFFD€", true},
		{"X2_0_encoded_surrogate", "\xed\xa0\x80", TitleBytes, "\uFFFD", true},
		{"X2_0_runs_split_by_removed_char", "\xff\u200b\xff", TitleBytes, "\uFFFD\uFFFD", true},

		{"X2_1_NUL", "a\x00b", TitleBytes, "ab", true},
		{"X2_1_ANSI_escape", "\x1b[31mred\x1b[0m", TitleBytes, "[31mred[0m", true},
		{"X2_1_newline_and_tab", "a\nb\tc", TitleBytes, "abc", true},
		{"X2_1_CR", "a\r\nb", TitleBytes, "ab", true},
		{"X2_1_DEL", "a\x7fb", TitleBytes, "ab", true},
		{"X2_1_C1_controls", "a\u0085b\u009bc\u0080\u009f", TitleBytes, "abc", true},
		{"X2_1_Latin1_after_C1_kept", "\u00a0\u00e9", TitleBytes, "\u00a0\u00e9", false},

		{"X2_2_bidi_override", "file\u202Efdp.exe", TitleBytes, "filefdp.exe", true},
		{"X2_2_tag_sentence", "ok\U000E0049\U000E0047\U000E004E\U000E004F\U000E0052\U000E0045", TitleBytes, "ok", true},
		{"X2_2_ZWJ_emoji", "👨\u200D👩", TitleBytes, "👨👩", true},
		{"X2_2_BOM", "\uFEFFhello", TitleBytes, "hello", true},
		{"X2_2_only_invisible", "\u200b\u2060\u2066", TitleBytes, "", true},

		{"X2_3_cut", "abcdefghijk", 10, "abcdefg…", true},
		{"X2_3_exactly_limit", "abcdefghij", 10, "abcdefghij", false},
		{"X2_3_4_byte_char_straddles_room", "abcdef😀xyz", 10, "abcdef…", true},
		{"X2_3_4_byte_char_ends_at_limit", "abcdef😀", 10, "abcdef😀", false},
		{"X2_3_4_byte_char_past_limit", "abcdefgh😀", 10, "abcdefg…", true},
		{"X2_3_tail_then_cut", "abcde😀xyz", 10, "abcde…", true},
		{"X2_3_removal_makes_it_fit", "abcdefgh\u200b\u200b", 10, "abcdefgh", true},
		{"X2_3_removal_before_limit_then_fits", "abcdefg\u202Ehij", 10, "abcdefghij", true},
		{"X2_3_cut_just_after_removed_invisibles", "abcdefg\u200b\u200bhijk", 10, "abcdefg…", true},
		{"X2_3_cut_counts_replacement", "abcdef\xffgh", 10, "abcdef…", true},
		{"X2_3_limit_3_is_only_ellipsis", "abcd", 3, "…", true},
		{"X2_3_limit_2_cuts_without_ellipsis", "abc", 2, "ab", true},
		{"X2_3_limit_2_whole_chars_only", "a€", 2, "a", true},
		{"X2_3_limit_1_multibyte", "€", 1, "", true},
		{"X2_3_limit_0", "a", 0, "", true},
		{"X2_3_limit_0_empty", "", 0, "", false},
		{"X2_3_negative_limit", "a", -5, "", true},
	})
}

func TestLineInvisibleList(t *testing.T) {
	// X2 step 2, exactly: every listed character goes, its neighbours stay.
	gone := []rune{0x200E, 0x200F, 0x061C, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E,
		0x2066, 0x2067, 0x2068, 0x2069, 0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF,
		0xE0000, 0xE0001, 0xE0041, 0xE007F}
	kept := []rune{0x061B, 0x061D, 0x200A, 0x2010, 0x2029, 0x202F, 0x205F, 0x2061,
		0x2065, 0x206A, 0xFEFE, 0xFF00, 0xDFFFF, 0xE0080, 0xE0100}
	for _, r := range gone {
		if got, changed := Line("a"+string(r)+"b", TitleBytes); got != "ab" || !changed {
			t.Errorf("X2_2 U+%04X: got %q, %v; want removed", r, got, changed)
		}
	}
	for _, r := range kept {
		in := "a" + string(r) + "b"
		if got, changed := Line(in, TitleBytes); got != in || changed {
			t.Errorf("X2_2 U+%04X: got %q, %v; want kept", r, got, changed)
		}
	}
}

func TestBlock(t *testing.T) {
	runClean(t, Block, []cleanCase{
		{"X2_1_keeps_newline_and_tab", "line 1\n\tline 2\n", OutputBytes, "line 1\n\tline 2\n", false},
		{"X2_1_CRLF_becomes_LF", "a\r\nb\r\n", OutputBytes, "a\nb\n", true},
		{"X2_1_lone_CR_removed", "progress 10%\rprogress 99%", OutputBytes, "progress 10%progress 99%", true},
		{"X2_1_other_C0_removed", "a\x0b\x0c\x1bb", OutputBytes, "ab", true},
		{"X2_1_C1_NEL_removed", "a\u0085b", OutputBytes, "ab", true},
		{"X2_2_invisible_removed", "x\u2067y\u2069\n", OutputBytes, "xy\n", true},
		{"X2_3_cut_keeps_layout", "a\nb\nc\nd", 6, "a\nb…", true},
		{"X2_3_newline_counts_as_a_byte", "\n\n\n\n", 4, "\n\n\n\n", false},
	})
}

func TestLabel(t *testing.T) {
	runClean(t, Label, []cleanCase{
		{"X4_belt_ASCII_16", "Run tests please", BeltChars, "Run tests please", false},
		{"X4_belt_ASCII_17", "Run all the tests", BeltChars, "Run all the tes…", true},
		{"X4_belt_16_multibyte_runes", strings.Repeat("日", 16), BeltChars, strings.Repeat("日", 16), false},
		{"X4_belt_17_multibyte_runes", strings.Repeat("日", 17), BeltChars, strings.Repeat("日", 15) + "…", true},
		{"X4_belt_16_four_byte_runes", strings.Repeat("😀", 16), BeltChars, strings.Repeat("😀", 16), false},
		{"X4_belt_17_four_byte_runes", strings.Repeat("😀", 17), BeltChars, strings.Repeat("😀", 15) + "…", true},
		{"X4_belt_counts_after_cleaning", strings.Repeat("a\u200b", 16), BeltChars, strings.Repeat("a", 16), true},
		{"X2_1_single_line", "De\nploy", BeltChars, "Deploy", true},
		{"X2_2_blank_after_cleaning", "\u202E\u200B", BeltChars, "", true},
		{"X2_3_limit_1_is_ellipsis", "ab", 1, "…", true},
		{"X2_3_limit_1_fits", "é", 1, "é", false},
		{"X2_3_limit_0", "a", 0, "", true},
	})
}

func TestLimits(t *testing.T) {
	// X4: the numbers the rest of the product relies on.
	for _, tc := range []struct {
		name      string
		got, want int
	}{
		{"X4_title", TitleBytes, 256},
		{"X4_label", LabelBytes, 128},
		{"X4_belt", BeltChars, 16},
		{"X4_rationale", RationaleBytes, 2048},
		{"X4_output", OutputBytes, 16384},
		{"X4_summary", SummaryBytes, 16384},
		{"X4_message", MessageBytes, 65536},
		{"X4_code", CodeBytes, 32768},
		{"X4_send_min", SendMinBytes, 1},
		{"X4_send_max", SendMaxBytes, 32768},
		{"X5_id_max", IDMaxBytes, 128},
		{"X6_link_max", LinkMaxChars, 2048},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

func TestLimitsCut(t *testing.T) {
	// X2 step 3 at every X4 byte limit: a full field stays, one byte more is cut.
	for _, tc := range []struct {
		name  string
		clean func(string, int) (string, bool)
		limit int
	}{
		{"X4_title", Line, TitleBytes},
		{"X4_label", Line, LabelBytes},
		{"X4_rationale", Block, RationaleBytes},
		{"X4_output", Block, OutputBytes},
		{"X4_message", Block, MessageBytes},
		{"X4_code", Block, CodeBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full := strings.Repeat("x", tc.limit)
			if got, changed := tc.clean(full, tc.limit); got != full || changed {
				t.Errorf("full field: got %d bytes, changed %v", len(got), changed)
			}
			got, changed := tc.clean(full+"y", tc.limit)
			if want := full[:tc.limit-3] + "…"; got != want || !changed {
				t.Errorf("one byte over: got %d bytes ending %q, changed %v", len(got), got[max(0, len(got)-6):], changed)
			}
		})
	}
}

func TestLongInputCut(t *testing.T) {
	// X2 step 3 on input far past the limit, clean and dirty.
	for _, in := range []string{
		strings.Repeat("abc", 100000),
		"\u202E" + strings.Repeat("日本語", 100000),
		strings.Repeat("\u200b", 1000) + strings.Repeat("ok\xff", 1000),
	} {
		got, changed := Line(in, TitleBytes)
		if len(got) > TitleBytes || !strings.HasSuffix(got, "…") || !changed || !utf8.ValidString(got) {
			t.Errorf("X2_3: got %d bytes %q, changed %v", len(got), got, changed)
		}
	}
}

func TestAllocs(t *testing.T) {
	ascii := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 90)
	block := strings.Repeat("func main() {\n\tprintln(\"hi\")\n}\n", 100)
	utf := strings.Repeat("Grüße, 世界! 😀 ", 100)
	dirty := strings.Repeat("a\u202Eb\u0085c ", 100)
	emoji := strings.Repeat("😀", BeltChars)
	mixedScripts := multilingual(4 << 10)
	cleanMixedScripts := fst(oracleClean(mixedScripts, MessageBytes, inBytes, layout))
	for _, tc := range []struct {
		name string
		fn   func()
		want float64
	}{
		{"fast_path_Line_ASCII", func() { Line(ascii[:TitleBytes], TitleBytes) }, 0},
		{"fast_path_Block_ASCII", func() { Block(ascii, MessageBytes) }, 0},
		{"fast_path_Block_layout", func() { Block(block, MessageBytes) }, 0},
		{"fast_path_Label_ASCII", func() { Label("Run tests", BeltChars) }, 0},
		{"clean_multibyte_unchanged", func() { Block(utf, MessageBytes) }, 0},
		{"clean_multibyte_Label", func() { Label(emoji, BeltChars) }, 0},
		{"ValidID", func() { ValidID("conv-0123456789abcdef") }, 0},
		{"clean_multilingual_unchanged", func() { Block(cleanMixedScripts, MessageBytes) }, 0},
		{"slow_path_one_alloc", func() { Block(dirty, MessageBytes) }, 1},
		{"multilingual_one_alloc", func() { Block(mixedScripts, MessageBytes) }, 1},
		{"cut_one_alloc", func() { Line(ascii, TitleBytes) }, 1},
		{"cut_multibyte_one_alloc", func() { Line(utf, TitleBytes) }, 1},
		{"Label_cut_one_alloc", func() { Label(utf, BeltChars) }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := testing.AllocsPerRun(100, tc.fn); got != tc.want {
				t.Errorf("allocs = %v, want %v", got, tc.want)
			}
		})
	}
}

package callercheck

import (
	"strings"
	"testing"
)

func TestParseStat(t *testing.T) {
	tail := " 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 777 22 23\n"
	tests := []struct {
		name      string
		line      string
		state     byte
		ppid      int
		starttime uint64
	}{
		{"plain", "123 (bash) S 42" + tail, 'S', 42, 777},
		{"C2_comm_with_spaces", "123 (my tool) R 42" + tail, 'R', 42, 777},
		{"C2_comm_with_paren_and_fake_fields", "123 (x) S 1 1 1) S 42" + tail, 'S', 42, 777},
		{"C2_comm_only_parens", "123 ()) Z 9" + tail, 'Z', 9, 777},
		{"C2_comm_with_newline", "123 (a\nb) S 42" + tail, 'S', 42, 777},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := parseStat([]byte(tt.line))
			if err != nil {
				t.Fatal(err)
			}
			if st.State != tt.state || st.PPID != tt.ppid || st.StartTime != tt.starttime {
				t.Fatalf("got %+v, want state %c ppid %d start %d", st, tt.state, tt.ppid, tt.starttime)
			}
		})
	}
	for _, bad := range []string{"", "123 bash S 1" + tail, "123 (bash) S", "123 (bash) S x" + tail, "123 (bash) SS 1" + tail} {
		if st, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) = %+v, want an error", bad, st)
		}
	}
}

func TestChooseHierarchy(t *testing.T) {
	tests := []struct {
		name, content, hier, path string
		ok                        bool
	}{
		{"unified", "0::/user.slice/user-1000.slice/user@1000.service/app.slice/collie-agent@demo.service\n",
			hierUnified, "/user.slice/user-1000.slice/user@1000.service/app.slice/collie-agent@demo.service", true},
		{"hybrid", "12:memory:/user.slice\n1:name=systemd:/user.slice/a.service\n0::/user.slice/a.service\n",
			hierUnified, "/user.slice/a.service", true},
		{"legacy_unified_at_root", "1:name=systemd:/user.slice/a.service\n0::/\n", hierSystemd, "/user.slice/a.service", true},
		{"C3_root_everywhere", "9:name=systemd:/\n4:memory:/x\n0::/\n", "", "", false},
		{"C3_empty", "", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hier, path, ok := chooseHierarchy([]byte(tt.content))
			if hier != tt.hier || path != tt.path || ok != tt.ok {
				t.Fatalf("got %q %q %v, want %q %q %v", hier, path, ok, tt.hier, tt.path, tt.ok)
			}
		})
	}
	if p, ok := parseCgroup([]byte("1:name=systemd:/a\n0::/b"), hierSystemd); !ok || p != "/a" {
		t.Errorf("parseCgroup systemd = %q %v", p, ok)
	}
}

func TestWithin(t *testing.T) {
	dir := "/user.slice/app.slice/collie-agent@demo.service"
	for p, want := range map[string]bool{
		dir:                      true,
		dir + "/sub":             true,
		dir + "x":                false, // collie-agent@demo.servicex is a sibling
		"/user.slice/app.slice":  false,
		"/user.slice/collie.svc": false,
	} {
		if got := within(p, dir); got != want {
			t.Errorf("within(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestRefusedIsASentence(t *testing.T) {
	err := refuse(Caller{PID: 7}, "the caller is the agent itself; %s", answerElsewhere)
	if !strings.HasSuffix(err.Error(), "answer from a paired device") {
		t.Fatalf("refusal %q does not say what to do", err)
	}
}

package callercheck

import (
	"strings"
	"testing"
)

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

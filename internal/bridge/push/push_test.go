package push

import "testing"

// TestKindString: every kind's one name, which logs, doctor, desktop
// notifications and web push payloads all use (D9: the summary is told
// apart from a question).
func TestKindString(t *testing.T) {
	for _, tt := range []struct {
		k    Kind
		want string
	}{
		{KindQuestion, "question"},
		{KindSummary, "summary"},
		{KindTest, "test"},
		{Kind(99), "question"},
		{Kind(-1), "question"},
	} {
		if got := tt.k.String(); got != tt.want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(tt.k), got, tt.want)
		}
	}
}

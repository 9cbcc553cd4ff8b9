package hint

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

// TestHintKeptApart_L4: the message and the hint stay apart through
// wrapping, so each can be printed on its own line or in its own field
// .
func TestHintKeptApart_L4(t *testing.T) {
	base := Errorf("create it with: mkdir -p /x", "open /x: %w", fs.ErrNotExist)
	for _, tt := range []struct {
		name      string
		err       error
		msg, hint string
	}{
		{"new", New("the daemon is not running", "start it: systemctl --user start collie"), "the daemon is not running", "start it: systemctl --user start collie"},
		{"errorf", base, "open /x: file does not exist", "create it with: mkdir -p /x"},
		{"wrapped_with_context", fmt.Errorf("the daemon cannot start: %w", base), "the daemon cannot start: open /x: file does not exist", "create it with: mkdir -p /x"},
		{"outer_hint_wins", Wrap(fmt.Errorf("read: %w", base), "another fix"), "read: open /x: file does not exist", "another fix"},
		{"plain", errors.New("plain"), "plain", ""},
		{"nil", nil, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Of(tt.err); got != tt.hint {
				t.Errorf("Of = %q; want %q", got, tt.hint)
			}
			if tt.err != nil && tt.err.Error() != tt.msg {
				t.Errorf("Error() = %q; want %q", tt.err.Error(), tt.msg)
			}
		})
	}
	if !errors.Is(base, fs.ErrNotExist) {
		t.Error("the hint hides the error it wraps")
	}
	if Wrap(nil, "x") != nil {
		t.Error("Wrap(nil) is not nil")
	}
}

package sockpath

import (
	"errors"
	"testing"
)

// TestCodePrivate: a refusal of the path's privacy is told apart from an
// agent that is not there by the code alone; collie doctor fails the first
// and warns of the second.
func TestCodePrivate_T3_T4(t *testing.T) {
	for code, private := range map[Code]bool{
		CodeSymlink: true, CodeNotDirectory: true, CodeWritable: true, CodeFolderOwner: true,
		CodeFolderMode: true, CodeNotSocket: true, CodeSocketOwner: true, CodeSocketMode: true,
		CodeListener: true,
		CodeNoPath:   false, CodeForm: false, CodeNoSocket: false, CodeNotListening: false,
		CodeCannotCheck: false, CodeCannotConnect: false, CodeUnsupported: false,
	} {
		if code.Private() != private {
			t.Errorf("%s.Private() = %v, want %v", code, code.Private(), private)
		}
	}
	cause := errors.New("peer uid 0, not 1000")
	e := ListenerError("/run/user/1000/desk/a.sock", cause)
	if e.Code != CodeListener || e.Part != e.Path || e.Reason != "the socket's listener is not you: peer uid 0, not 1000" || !errors.Is(e, cause) {
		t.Errorf("ListenerError = %#v", e)
	}
}

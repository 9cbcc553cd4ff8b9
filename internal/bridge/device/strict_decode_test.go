package device

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestDecodeBodyStrict: the device API's small bodies (pairing) are read
// by the same rules as writes.
func TestDecodeBodyStrict(t *testing.T) {
	type body struct {
		Code string `json:"code"`
		Name string `json:"name,omitempty"`
	}
	for _, tc := range []struct{ data, want string }{
		{`{"code":"c","name":"n"}`, ""},
		{`{"Code":"c"}`, `unknown field "Code"`},
		{`{"code":"a","code":"b"}`, "appears twice"},
		{"{\"code\":\"\xff\"}", "not valid UTF-8"},
		{`{"code":"c"} {}`, "data after"},
	} {
		r := httptest.NewRequest("POST", "/api/v1/pair", strings.NewReader(tc.data))
		var b body
		err := decodeBody(r, &b)
		if tc.want == "" {
			if err != nil || b.Code != "c" || b.Name != "n" {
				t.Errorf("decodeBody(%q) = %+v, %v", tc.data, b, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("decodeBody(%q): err = %v, want %q", tc.data, err, tc.want)
		}
	}
}

package bearer

import (
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	long := strings.Repeat("a", MaxToken)
	for _, tc := range []struct {
		name, in, want string
		ok             bool
	}{
		{"bearer", "Bearer collie_a_x", "collie_a_x", true},
		{"scheme in any case", "bEARER tok", "tok", true},
		{"several spaces", "Bearer   tok", "tok", true},
		{"longest token", "Bearer " + long, long, true},
		{"printable punctuation", "Bearer a!b~c=", "a!b~c=", true},
		{"bare token", "collie_a_x", "", false},
		{"bare token with a space inside", "collie_a_x y", "", false},
		{"other scheme", "Basic dXNlcjpwYXNz", "", false},
		{"scheme only", "Bearer", "", false},
		{"scheme and space", "Bearer ", "", false},
		{"tab for space", "Bearer\ttok", "", false},
		{"scheme glued", "Bearertok", "", false},
		{"two tokens", "Bearer a b", "", false},
		{"trailing space", "Bearer tok ", "", false},
		{"control character", "Bearer to\x01k", "", false},
		{"non-ASCII", "Bearer tök", "", false},
		{"too long", "Bearer " + long + "a", "", false},
		{"empty", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Parse(tc.in)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("Parse(%.40q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestTokenOneField(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		ok     bool
	}{
		{"none", nil, false},
		{"one", []string{"Bearer a"}, true},
		{"two fields", []string{"Bearer a", "Bearer a"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.values {
				h.Add("Authorization", v)
			}
			if _, ok := Token(h); ok != tc.ok {
				t.Fatalf("Token = %v, want %v", ok, tc.ok)
			}
		})
	}
}

// TestOneParserEverywhere: no code outside this package reads the
// Authorization header itself; every surface calls Token (the agent API,
// the device API, a durable agent's token check). The push service double
// reads a VAPID header, which is not a bearer credential.
func TestOneParserEverywhere(t *testing.T) {
	allowed := map[string]string{
		filepath.Join("internal", "bridge", "push", "webpush", "pushtest", "pushtest.go"): "a push service double reading VAPID, not a bearer credential",
	}
	root := filepath.Join("..", "..", "..")
	read := regexp.MustCompile(`(?i)(\.Get|\.Values|\[)\(?"Authorization"`)
	var found []string
	for _, dir := range []string{"cmd", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			if strings.HasPrefix(rel, filepath.Join("internal", "protocol", "bearer")+string(filepath.Separator)) || allowed[rel] != "" {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if read.Match(data) {
				found = append(found, rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(found) > 0 {
		t.Fatalf("these read Authorization themselves; call bearer.Token instead: %v", found)
	}
}

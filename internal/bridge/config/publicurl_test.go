package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParsePublicURL_D6: public_url is an https origin and nothing more;
// every other shape is refused with a sentence that says what to write
// .
func TestParsePublicURL_D6(t *testing.T) {
	tests := []struct {
		in       string
		want     string // the origin, "" when refused
		loopback bool
		err      string // part of the error
	}{
		{in: "https://collie.example.ts.net", want: "https://collie.example.ts.net"},
		{in: "https://Collie.Example.TS.net./", want: "https://collie.example.ts.net"},
		{in: "https://collie.example:443", want: "https://collie.example"},
		{in: "https://collie.example:8443", want: "https://collie.example:8443"},
		{in: "https://192.0.2.7:8780", want: "https://192.0.2.7:8780"},
		{in: "https://[2001:db8::7]", want: "https://[2001:db8::7]"},
		{in: "https://localhost:8780", want: "https://localhost:8780", loopback: true},
		{in: "https://127.0.0.2", want: "https://127.0.0.2", loopback: true},
		{in: "https://[::1]:1", want: "https://[::1]:1", loopback: true},
		{in: "http://collie.example", err: "is not https://"},
		{in: "collie.example", err: "is not https://"},
		{in: "//collie.example", err: "is not https://"},
		{in: "https://", err: "has no host"},
		{in: "https:collie.example", err: "has no host"},
		{in: "https://me:pw@collie.example", err: "user name or password"},
		{in: "https://me@collie.example", err: "user name or password"},
		{in: "https://collie.example/collie", err: "has a path"},
		{in: "https://collie.example/?a=1", err: "has a query"},
		{in: "https://collie.example?", err: "has a query"},
		{in: "https://collie.example#x", err: "has a fragment"},
		{in: "https://collie.example#", err: "has a fragment"},
		{in: "https://collie.example:", err: "empty port"},
		{in: "https://collie.example:0", err: "port"},
		{in: "https://collie.example:65536", err: "port"},
		{in: "https://collie.example:0443", err: "port"},
		{in: "https://collie.example:+1", err: "not a URL"},
		{in: "https://col lie.example", err: "spaces"},
		{in: " https://collie.example", err: "spaces"},
		{in: "https://collie.example\n", err: "spaces"},
		{in: "https://collié.example", err: "non-ASCII"},
		{in: "https://%63ollie.example", err: "has %"},
		{in: "https://collie_1.example", err: "not a DNS name"},
		{in: "https://-collie.example", err: "not a DNS name"},
		{in: "https://collie..example", err: "not a DNS name"},
		{in: "https://01.2.3.4", err: "not a DNS name"},
		{in: "https://[fe80::1%25lo]", err: "has %"},
		{in: "https://[collie.example]", err: "not a URL"},
		{in: "https://" + strings.Repeat("a", 600) + ".example", err: "over 512 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			o, err := ParsePublicURL(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParsePublicURL(%q) = %v, %v; want an error with %q", tt.in, o, err, tt.err)
				}
				for _, must := range []string{"public_url", "https://", "for example"} {
					if !strings.Contains(err.Error(), must) {
						t.Errorf("the error does not say what to write (%q): %v", must, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePublicURL(%q): %v", tt.in, err)
			}
			if o.String() != tt.want || o.Loopback() != tt.loopback {
				t.Fatalf("ParsePublicURL(%q) = %s loopback %v, want %s %v", tt.in, o, o.Loopback(), tt.want, tt.loopback)
			}
		})
	}
}

// TestLoad_DevicesChecked: a bad public_url or proxy_headers stops the
// whole file with the reason, so the daemon, collie pair and collie
// doctor agree.
func TestLoad_DevicesChecked(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ name, content, err string }{
		{"public_url_ok", "[devices]\npublic_url = \"https://collie.example\"\n", ""},
		{"public_url_http", "[devices]\npublic_url = \"http://collie.example\"\n", "is not https://"},
		{"proxy_headers_ok", "[devices]\npublic_url = \"https://collie.example\"\nproxy_headers = \"x-forwarded\"\n", ""},
		{"proxy_headers_forwarded", "[devices]\npublic_url = \"https://collie.example\"\nproxy_headers = \"forwarded\"\n", ""},
		{"proxy_headers_unknown", "[devices]\npublic_url = \"https://collie.example\"\nproxy_headers = \"yes\"\n", `proxy_headers = "yes" is not known`},
		{"proxy_headers_without_public_url", "[devices]\nproxy_headers = \"x-forwarded\"\n", "without public_url"},
		{"proxy_headers_beyond_loopback", "[devices]\nlisten = \"0.0.0.0:8780\"\npublic_url = \"https://collie.example\"\nproxy_headers = \"x-forwarded\"\n", "trusted only on a loopback listener"},
		{"proxy_headers_device_api_off", "[devices]\nlisten = \"\"\npublic_url = \"https://collie.example\"\nproxy_headers = \"x-forwarded\"\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.name+".toml")
			if err := os.WriteFile(p, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err := Load(p)
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("Load: %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), p)):
				t.Fatalf("Load: %v; want an error naming the file and %q", err, tt.err)
			}
		})
	}
}

// FuzzPublicURL: whatever public_url holds, an accepted one is an https
// origin that parses back to itself.
func FuzzPublicURL(f *testing.F) {
	for _, s := range []string{"https://collie.example", "https://[::1]:8780/", "http://x", "https://a@b", "https://a/b?c#d", "https://xn--clli-bra.example:65535"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParsePublicURL(s)
		if err != nil {
			return
		}
		again, err := ParsePublicURL(o.String())
		if err != nil || again != o {
			t.Fatalf("%q gave %s, which parses as %v, %v", s, o, again, err)
		}
		if !strings.HasPrefix(o.String(), "https://") || strings.ContainsAny(o.Host, "/?#@% ") || o.Host == "" {
			t.Fatalf("%q gave %q", s, o)
		}
	})
}

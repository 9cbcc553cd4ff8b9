package sources

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// MaxURLBytes is K2's limit on an agent's URL. Its token's rule is
// wire.CheckToken, which the agent shares.
const MaxURLBytes = 2048

// CheckURL reports whether u may reach a durable agent (K2): https://, or
// http:// to 127.0.0.1 or localhost with a port, at most 2048 bytes, with no
// user name, password, query or fragment. Its errors name the rule and never
// repeat the URL, which might hold a password.
func CheckURL(u string) error {
	if len(u) > MaxURLBytes {
		return fmt.Errorf("the URL is %d bytes; the limit is %d", len(u), MaxURLBytes)
	}
	for _, r := range u {
		if r <= ' ' || r == 0x7f {
			return errors.New("the URL has a space or control character; remove it")
		}
	}
	p, err := url.Parse(u)
	if err != nil {
		return errors.New("the URL does not parse; give it as https://host[:port]/path")
	}
	if p.User != nil {
		return errors.New("the URL has a user name or password; remove it (the token goes in --token-env)")
	}
	if p.RawQuery != "" || p.ForceQuery || strings.Contains(u, "?") {
		return errors.New("the URL has a query (?…); remove it")
	}
	if p.Fragment != "" || strings.Contains(u, "#") {
		return errors.New("the URL has a fragment (#…); remove it")
	}
	switch p.Scheme {
	case "https":
		if p.Hostname() == "" {
			return errors.New("the URL has no host; give it as https://host[:port]/path")
		}
		if port := p.Port(); port != "" && !validPort(port) {
			return errors.New("the URL's port is not a number from 1 to 65535")
		}
	case "http":
		// Plain HTTP only to this machine: the token must not cross a network in clear.
		if h := p.Hostname(); h != "127.0.0.1" && h != "localhost" {
			return errors.New("plain http:// is only for an agent on this machine (http://127.0.0.1:PORT or http://localhost:PORT); use https://")
		}
		if !validPort(p.Port()) {
			return errors.New("an http:// URL needs a port: http://127.0.0.1:PORT or http://localhost:PORT")
		}
	default:
		return errors.New("the URL must start with https:// (or http://127.0.0.1:PORT for an agent on this machine)")
	}
	return nil
}

func validPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 1 && n <= 65535 && strconv.Itoa(n) == s
}

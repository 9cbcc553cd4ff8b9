package sanitize

import (
	"errors"
	"fmt"
	"net/url"
	"unicode"
	"unicode/utf8"
)

// ValidID reports whether id follows X5: 1 to 128 bytes of valid UTF-8
// with no control character, no space of any kind (the invisible
// characters of X2 included) and none of '/', '?', '#', which would let an
// id reach into a path, query or fragment. Ids are never cleaned or cut:
// an object with a bad id is dropped.
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > IDMaxBytes {
		return false
	}
	for i := 0; i < len(id); {
		if c := id[i]; c < utf8.RuneSelf {
			// ' ' and every byte below it is a space or a control.
			if c <= ' ' || c == 0x7F || c == '/' || c == '?' || c == '#' {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(id[i:])
		if n == 1 || isControl(r) || isInvisible(r) || unicode.IsSpace(r) {
			return false // n == 1: invalid UTF-8
		}
		i += n
	}
	return true
}

// linkError is a broken X6 rule. The messages are constants and name only
// the rule, never the address, which is untrusted text bound for a log.
type linkError string

func (e linkError) Error() string { return string(e) }

const (
	errLinkUTF8      linkError = "link is not valid UTF-8"
	errLinkLong      linkError = "link is longer than 2048 characters"
	errLinkControl   linkError = "link contains a control character"
	errLinkSpace     linkError = "link contains a space"
	errLinkInvisible linkError = "link contains an invisible or direction character"
	errLinkParse     linkError = "link is not a valid URL"
	errLinkScheme    linkError = "link is not https"
	errLinkUser      linkError = "link contains a user name or password"
	errLinkNoHost    linkError = "link has no host"
)

// CheckLink reports whether u may be the address of a link item (X6): an
// https URL with a host, no user name or password, no space, control or
// invisible character, and at most 2048 characters. The error names the
// first rule u breaks.
func CheckLink(u string) error {
	if !utf8.ValidString(u) {
		return errLinkUTF8
	}
	if len(u) > LinkMaxChars && utf8.RuneCountInString(u) > LinkMaxChars {
		return errLinkLong
	}
	for _, r := range u {
		if isControl(r) {
			return errLinkControl
		}
		if unicode.IsSpace(r) {
			return errLinkSpace
		}
		if isInvisible(r) {
			return errLinkInvisible
		}
	}
	p, err := url.Parse(u)
	switch {
	case err != nil:
		return errLinkParse
	case p.Scheme != "https": // Parse has lowered the scheme's case
		return errLinkScheme
	case p.User != nil: // any '@' in the authority, even with no name
		return errLinkUser
	case p.Hostname() == "":
		return errLinkNoHost
	}
	return nil
}

// CheckSend reports whether s may be sent to a durable agent (X4): 1 to
// 32768 bytes of valid UTF-8. The error is a sentence to show the user.
func CheckSend(s string) error {
	switch {
	case len(s) < SendMinBytes:
		return errors.New("the text is empty; type at least one character")
	case len(s) > SendMaxBytes:
		return fmt.Errorf("the text is %d bytes; the limit is %d", len(s), SendMaxBytes)
	case !utf8.ValidString(s):
		return errors.New("the text is not valid UTF-8; paste it again as plain text")
	}
	return nil
}

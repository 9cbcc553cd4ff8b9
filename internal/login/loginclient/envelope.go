package loginclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/collie-linux/collie/internal/login/loginstore"
	"github.com/collie-linux/collie/internal/protocol/jsonstrict"
)

// Grant is the agent-login action's result.
type Grant struct {
	Grant     string
	ExpiresAt time.Time
}

// envelope is the raft wrapper's output on success, closed at every level.
// Every member is a pointer or raw so that a missing one is told apart.
type envelope struct {
	OK   *bool `json:"ok"`
	Data *struct {
		Service *string         `json:"service"`
		Action  *string         `json:"action"`
		Status  *int            `json:"status"`
		Result  *envelopeResult `json:"result"`
	} `json:"data"`
}

type envelopeResult struct {
	Schema    *string `json:"schema"`
	Service   *string `json:"service"`
	Grant     *string `json:"grant"`
	ExpiresAt *string `json:"expires_at"`
}

// errEnvelope is every refusal of the envelope; the reason says which rule,
// never a value from the output.
func errEnvelope(reason string) error {
	return errors.New("agent-login: the platform's answer " + reason)
}

// ParseEnvelope accepts exactly
// {"ok":true,"data":{"service":S,"action":"agent-login","status":200,
// "result":{"schema":"raft-cli-agent-login-grant.v1","service":S,"grant":G,"expires_at":T}}}
// with T an RFC 3339 time after now and at most GrantCeiling away (the
// bridge issues 300 s; the rest is the reference CLI's allowance for
// clocks apart).
func ParseEnvelope(out []byte, service string, now time.Time) (Grant, error) {
	var probe struct {
		OK jsontext.Value `json:"ok"`
	}
	if jsonstrict.Unmarshal(out, &probe, jsonstrict.Open) != nil {
		return Grant{}, errEnvelope("is not a JSON object")
	}
	if string(probe.OK) != "true" {
		return Grant{}, errEnvelope("says the agent-login action did not succeed")
	}
	var e envelope
	if err := jsonstrict.Unmarshal(out, &e); err != nil {
		return Grant{}, errEnvelope("is not the agent-login envelope (" + closedReason(err) + ")")
	}
	d := e.Data
	switch {
	case d == nil || d.Service == nil || d.Action == nil || d.Status == nil || d.Result == nil:
		return Grant{}, errEnvelope("lacks a member of data")
	case *d.Service != service:
		return Grant{}, errEnvelope("is for another service")
	case *d.Action != "agent-login":
		return Grant{}, errEnvelope("is for another action")
	case *d.Status != 200:
		return Grant{}, errEnvelope("has a status other than 200")
	}
	r := d.Result
	switch {
	case r.Schema == nil || r.Service == nil || r.Grant == nil || r.ExpiresAt == nil:
		return Grant{}, errEnvelope("lacks a member of the grant")
	case *r.Schema != SchemaGrant:
		return Grant{}, errEnvelope("has a grant of another schema")
	case *r.Service != service:
		return Grant{}, errEnvelope("has a grant for another service")
	case !loginstore.ValidToken(*r.Grant):
		return Grant{}, errEnvelope("has an empty or malformed grant")
	}
	exp, ok := loginstore.ParseTime(*r.ExpiresAt)
	switch {
	case !ok:
		return Grant{}, errEnvelope("has a grant expiry that is not an RFC 3339 time")
	case !exp.After(now):
		return Grant{}, errEnvelope("has a grant that already expired")
	case exp.Sub(now) > GrantCeiling:
		return Grant{}, errEnvelope("has a grant that expires too late (over 5 minutes away)")
	}
	return Grant{Grant: *r.Grant, ExpiresAt: exp}, nil
}

// closedReason is what kind of rule a reply broke, without its values.
func closedReason(err error) string {
	var je *jsonstrict.Error
	if !errors.As(err, &je) {
		return "not JSON"
	}
	switch je.Kind {
	case jsonstrict.UnknownMember:
		return "a member not in the schema"
	case jsonstrict.DuplicateName:
		return "a member given twice"
	case jsonstrict.WrongType:
		return "a member of the wrong type"
	case jsonstrict.InvalidUTF8:
		return "invalid UTF-8"
	case jsonstrict.Trailing:
		return "data after the value"
	}
	return "not JSON"
}

// sessionReply is a token endpoint's reply: the six keys, all present.
type sessionReply struct {
	Schema           *string        `json:"schema"`
	TokenType        *string        `json:"token_type"`
	AccessToken      *string        `json:"access_token"`
	AccessExpiresAt  *string        `json:"access_expires_at"`
	RefreshToken     *string        `json:"refresh_token"`
	RefreshExpiresAt jsontext.Value `json:"refresh_expires_at"`
}

// ParseSession accepts exactly the six keys of raft-cli-agent-session.v1,
// a session not yet expired at now (access, and refresh when it has an
// expiry). Its errors name the rule, never a value.
func ParseSession(body []byte, now time.Time) (loginstore.Session, error) {
	var r sessionReply
	if err := jsonstrict.Unmarshal(body, &r); err != nil {
		return loginstore.Session{}, errors.New("the session has " + closedReason(err))
	}
	if r.Schema == nil || r.TokenType == nil || r.AccessToken == nil || r.AccessExpiresAt == nil || r.RefreshToken == nil || len(r.RefreshExpiresAt) == 0 {
		return loginstore.Session{}, errors.New("the session lacks one of its six members")
	}
	s := loginstore.Session{Schema: *r.Schema, TokenType: *r.TokenType, AccessToken: *r.AccessToken,
		AccessExpiresAt: *r.AccessExpiresAt, RefreshToken: *r.RefreshToken}
	switch r.RefreshExpiresAt.Kind() {
	case 'n':
	case '"':
		var t string
		if jsonstrict.Unmarshal(r.RefreshExpiresAt, &t) != nil {
			return loginstore.Session{}, errors.New("the session's refresh_expires_at is not a string")
		}
		s.RefreshExpiresAt = &t
	default:
		return loginstore.Session{}, errors.New("the session's refresh_expires_at is neither a time nor null")
	}
	if err := s.Check(); err != nil {
		return loginstore.Session{}, errors.New("the session's " + err.Error())
	}
	if !s.AccessExpiry().After(now) {
		return loginstore.Session{}, errors.New("the session's access token already expired")
	}
	if t, ok := s.RefreshExpiry(); ok && !t.After(now) {
		return loginstore.Session{}, errors.New("the session's refresh token already expired")
	}
	return s, nil
}

// jsonCompact is v's JSON without HTML escaping.
func jsonCompact(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// cappedBuffer keeps the first max bytes written and notes more.
type cappedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.over = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

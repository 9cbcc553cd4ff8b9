package loginstore

import (
	"errors"
	"io"
	"os"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/collie-linux/collie/internal/protocol/jsonstrict"
)

// stored is a record as read: refresh_expires_at raw, so that a missing
// member (refused) and null (accepted) differ, as they do for the package.
type stored struct {
	Schema           string         `json:"schema"`
	TokenType        string         `json:"token_type"`
	AccessToken      string         `json:"access_token"`
	AccessExpiresAt  string         `json:"access_expires_at"`
	RefreshToken     string         `json:"refresh_token"`
	RefreshExpiresAt jsontext.Value `json:"refresh_expires_at"`
	Service          *string        `json:"service"`
	APIBase          string         `json:"api_base"`
	UpdatedAt        *string        `json:"updated_at"`
}

// Read returns the service's stored record, or ok false when there is no
// readable, well-formed one (the package's readAgentSession returning
// null; see the package doc for where Collie is stricter). It never
// returns an error: a broken store reads as no session.
func Read(e Env, service string) (r Record, ok bool) {
	path, err := Path(e, service)
	if err != nil {
		return Record{}, false
	}
	data, err := readFile(path)
	if err != nil {
		return Record{}, false
	}
	return Parse(data, service)
}

// readFile reads path, a regular file of at most MaxFile bytes; a link is
// refused.
func readFile(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi2, err := f.Stat(); err != nil || !os.SameFile(fi, fi2) {
		return nil, errors.New("the file changed while it was opened")
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFile {
		return nil, errors.New("too large")
	}
	return data, nil
}

// Parse is Read's check of a file's bytes for service.
func Parse(data []byte, service string) (r Record, ok bool) {
	var s stored
	if err := jsonstrict.Unmarshal(data, &s, jsonstrict.Open); err != nil {
		return Record{}, false
	}
	r = Record{
		Session: Session{Schema: s.Schema, TokenType: s.TokenType, AccessToken: s.AccessToken,
			AccessExpiresAt: s.AccessExpiresAt, RefreshToken: s.RefreshToken},
		APIBase: s.APIBase,
	}
	switch s.RefreshExpiresAt.Kind() {
	case 'n':
	case '"':
		var t string
		if err := jsonstrict.Unmarshal(s.RefreshExpiresAt, &t); err != nil {
			return Record{}, false
		}
		r.RefreshExpiresAt = &t
	default: // missing, or not a string
		return Record{}, false
	}
	if s.Service == nil || s.UpdatedAt == nil || *s.Service != service {
		return Record{}, false
	}
	r.Service, r.UpdatedAt = *s.Service, *s.UpdatedAt
	if r.Check() != nil || r.APIBase == "" {
		return Record{}, false
	}
	return r, true
}

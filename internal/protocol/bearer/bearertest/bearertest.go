// Package bearertest is the table every surface that reads an
// Authorization header is tested against (testdata/authorization.json of
// internal/protocol/bearer): the same header must be accepted or refused alike on
// the agent API, the device API and a durable agent's token transport.
package bearertest

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Case is one Authorization header: its fields, with TOKEN standing for
// a good credential, and whether a surface must accept it.
type Case struct {
	Name     string   `json:"name"`
	Fields   []string `json:"fields"`
	Accepted bool     `json:"accepted"`
}

// Set puts c's fields, with token for TOKEN, on h.
func (c Case) Set(h http.Header, token string) {
	h.Del("Authorization")
	for _, f := range c.Fields {
		h.Add("Authorization", strings.ReplaceAll(f, "TOKEN", token))
	}
}

// Cases reads the table.
func Cases(t testing.TB) []Case {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "testdata", "authorization.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cs []Case
	if err := json.Unmarshal(data, &cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

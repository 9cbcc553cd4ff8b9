package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksLittle: the hook program starts once per tool call of a coding
// agent, and what it links is what its start costs (page faults, package
// inits). It speaks HTTP/1.1 to the agent's socket itself and leaves to
// collie what only an agent environment needs (the bridge over HTTPS),
// so none of these may come back in through a dependency.
func TestLinksLittle(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	for _, heavy := range []string{
		"net/http", "crypto/tls", "crypto/x509", "regexp", "encoding/gob", "log/slog", "text/template",
		"github.com/pelletier/go-toml/v2", "github.com/google/jsonschema-go/jsonschema",
		"github.com/modelcontextprotocol/go-sdk/mcp", "github.com/coreos/go-systemd/v22/journal",
		"github.com/collie-linux/collie/internal/cli", "github.com/collie-linux/collie/internal/agent/ask",
		"github.com/collie-linux/collie/internal/login/loginclient",
	} {
		for _, d := range deps {
			if d == heavy {
				t.Errorf("collie-hook links %s", heavy)
			}
		}
	}
	t.Logf("collie-hook links %d packages", len(deps))
}

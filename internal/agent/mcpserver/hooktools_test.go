package mcpserver

import (
	"slices"
	"testing"
	"testing/synctest"

	"github.com/collie-linux/collie/internal/agent/ask/hook"
)

// TestHookKnowsEveryTool: the hook lets collie mcp's own tools through
// unasked by the names in hook.MCPTools; they are exactly the server's.
func TestHookKnowsEveryTool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, Config{Version: "0.9"})
		list, err := r.cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range list.Tools {
			names = append(names, tool.Name)
		}
		want := slices.Clone(hook.MCPTools)
		slices.Sort(names)
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Fatalf("the server's tools %v, hook.MCPTools %v", names, want)
		}
	})
}

//go:build linux

package agentclients

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/collie-linux/collie/internal/testkit/fakemodel"
)

// TestGemini_ToolsOfferedByMode records which of the tools collie's hook
// gates gemini -p offers the model in each approval mode: in -p a mode
// leaves out every tool it would ask the user about, so a call of it is
// "not found" and no hook runs (TestGemini_Bridge_D1's "unoffered"
// rows). The default mode offers none of them but google_web_search.
func TestGemini_ToolsOfferedByMode(t *testing.T) {
	Require(t, Gemini)
	gated := []string{"run_shell_command", "write_file", "replace", "web_fetch", "google_web_search"}
	for _, tc := range []struct {
		mode  string
		offer []string // of gated
	}{
		{"default", []string{"google_web_search"}},
		{"auto_edit", []string{"write_file", "replace", "web_fetch", "google_web_search"}},
		{"yolo", gated},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			s := New(t)
			api := fakemodel.Start([]fakemodel.Turn{fakemodel.Say("all done")})
			defer api.Close()
			if err := s.WriteFile(s.GeminiSettingsPath(), GeminiSettings(), 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := s.RunGemini(context.Background(), clientTimeout, api.URL, "hi", "--approval-mode", tc.mode)
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("gemini: %v %v", err, res)
			}
			loop := api.TurnRequests()
			if len(loop) == 0 {
				t.Fatalf("no request offered tools\n%v", res)
			}
			var g struct {
				Tools []struct {
					Decls []struct {
						Name string `json:"name"`
					} `json:"functionDeclarations"`
				} `json:"tools"`
			}
			if err := json.Unmarshal(loop[0].Body, &g); err != nil {
				t.Fatal(err)
			}
			var offered, all []string
			for _, tool := range g.Tools {
				for _, d := range tool.Decls {
					all = append(all, d.Name)
					if slices.Contains(gated, d.Name) {
						offered = append(offered, d.Name)
					}
				}
			}
			slices.Sort(offered)
			want := slices.Sorted(slices.Values(tc.offer))
			if !slices.Equal(offered, want) {
				t.Fatalf("%s offers %v of the gated tools (all: %v), want %v", tc.mode, offered, all, want)
			}
		})
	}
}

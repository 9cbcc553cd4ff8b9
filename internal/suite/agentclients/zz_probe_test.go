//go:build linux

package agentclients

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/collie-linux/collie/internal/testkit/fakemodel"
)

func TestZZProbeGeminiTools(t *testing.T) {
	Require(t, Gemini)
	for _, mode := range []string{"default", "auto_edit", "yolo", "plan"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			s := New(t)
			api := fakemodel.Start([]fakemodel.Turn{fakemodel.Say("all done")})
			defer api.Close()
			if err := s.WriteFile(s.GeminiSettingsPath(), GeminiSettings(), 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := s.RunGemini(context.Background(), clientTimeout, api.URL, "hi", "--approval-mode", mode)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range api.Requests() {
				var g struct {
					Tools []struct {
						FD []struct {
							Name string `json:"name"`
						} `json:"functionDeclarations"`
					} `json:"tools"`
				}
				json.Unmarshal(r.Body, &g)
				var names []string
				for _, x := range g.Tools {
					for _, f := range x.FD {
						names = append(names, f.Name)
					}
				}
				t.Logf("%s: %s %v", mode, r.Path, names)
			}
			t.Logf("%v", res.ExitCode)
		})
	}
}

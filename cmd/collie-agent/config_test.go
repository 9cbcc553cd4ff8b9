package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadConfig(t *testing.T) {
	tests := []struct {
		name    string
		content string // "" means no file
		title   string
		wantErr string
	}{
		{name: "missing_file_gives_defaults", title: "Deploy the demo to staging?"},
		{name: "good", content: "title = \"Ops\"\n[question]\ntitle = \"Restart nginx?\"\nrationale = \"It is stuck.\"\n", title: "Restart nginx?"},
		{name: "unknown_key", content: "title = \"x\"\ncolour = \"red\"\n", wantErr: "unknown setting"},
		{name: "bad_syntax", content: "title = \n", wantErr: "line 1"},
		{name: "empty_question_title", content: "[question]\ntitle = \"\"\n", wantErr: "question.title is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "demo.toml")
			if tt.content != "" {
				os.WriteFile(path, []byte(tt.content), 0o600)
			}
			cfg, err := loadConfig(path, "demo")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), path) {
					t.Fatalf("err = %v, want it to name %s and say %q", err, path, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Question.Title != tt.title {
				t.Fatalf("question title = %q, want %q", cfg.Question.Title, tt.title)
			}
		})
	}
}

func TestExampleConfigParses(t *testing.T) {
	if _, err := loadConfig("testdata/example.toml", "demo"); err != nil {
		t.Fatalf("the documented example config does not load: %v", err)
	}
}

func TestDemoSnapshotIsClean(t *testing.T) {
	s := demoSnapshot("demo", defaultConfig("demo"))
	q := s.Spaces[0].Tabs[0].Conversations[0].Questions[0]
	if q.Kind != "yes-no" || q.Revision != 1 || q.ToolCall == "" {
		t.Fatalf("demo question = %+v", q)
	}
}

func TestRunRefusesBadName(t *testing.T) {
	var out, errOut strings.Builder
	if code := run([]string{"--name", "../etc"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "is not valid") {
		t.Fatalf("code %d, stderr %q", code, errOut.String())
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/ask"
	"github.com/collie-linux/collie/internal/agent/ask/hook"
)

const testHookProgram = "/opt/collie dir/libexec/collie/collie-hook"

// TestSetup_HookProgram_D1: with collie's hook program installed, setup
// writes the program's path (no "ask"), replacing the entry an earlier
// setup wrote with collie ask --hook in place; the entry reads back as
// the program's, and a second run changes nothing. The plugin of a client
// whose hook is a plugin runs the program the same way.
func TestSetup_HookProgram_D1(t *testing.T) {
	for _, client := range []string{"claude", "gemini"} {
		t.Run(client, func(t *testing.T) {
			h := ask.HookClientNamed(client)
			path := filepath.Join(t.TempDir(), "settings.json")
			var out bytes.Buffer
			// What an earlier setup wrote: collie ask --hook.
			if err := setupFile(&out, h, path, testCollie, hook.SetupWait, false, time.Now()); err != nil {
				t.Fatal(err)
			}
			old, _ := os.ReadFile(path)
			if entries, _ := h.FindHook(old, path); len(entries) != 1 || !entries[0].ViaAsk() {
				t.Fatalf("the collie ask --hook entry: %+v", entries)
			}
			out.Reset()
			if err := setupFile(&out, h, path, testHookProgram, hook.SetupWait, false, time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(path)
			entries, err := h.FindHook(got, path)
			if err != nil || len(entries) != 1 {
				t.Fatalf("entries %+v %v in\n%s", entries, err, got)
			}
			e := entries[0]
			want := "'" + testHookProgram + "' --hook " + client + " --timeout 120s" + h.OrBlock
			if e.Command != want || e.Program() != testHookProgram || e.ViaAsk() || e.Wait != hook.SetupWait {
				t.Fatalf("entry %+v, want the command %q", e, want)
			}
			out.Reset()
			if err := setupFile(&out, h, path, testHookProgram, hook.SetupWait, false, time.Now().Add(2*time.Hour)); err != nil || !strings.Contains(out.String(), "nothing to change") {
				t.Fatalf("second run: %v %s", err, out.String())
			}
		})
	}
	t.Run("codex", func(t *testing.T) {
		h := ask.HookClientNamed("codex")
		path := filepath.Join(t.TempDir(), "config.toml")
		var out bytes.Buffer
		if err := setupFile(&out, h, path, testHookProgram, hook.SetupWait, false, time.Now()); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		entries, err := h.FindHook(got, path)
		if err != nil || len(entries) != 2 {
			t.Fatalf("entries %+v %v in\n%s", entries, err, got)
		}
		for _, e := range entries {
			if e.Program() != testHookProgram || e.ViaAsk() || e.Untrusted || !e.OrBlock {
				t.Fatalf("entry %+v", e)
			}
		}
	})
	t.Run("opencode_plugin", func(t *testing.T) {
		src := ask.PluginSource(testHookProgram, hook.SetupWait)
		if !bytes.Contains(src, []byte(`spawn(COLLIE, ["--hook", "opencode"`)) {
			t.Fatalf("the plugin does not run the hook program with --hook:\n%s", src)
		}
		if p := ask.ReadPlugin(src); !p.Current || p.Collie != testHookProgram {
			t.Fatalf("%+v", p)
		}
		old := ask.PluginSource(testCollie, hook.SetupWait)
		if !bytes.Contains(old, []byte(`spawn(COLLIE, ["ask", "--hook", "opencode"`)) || !ask.ReadPlugin(old).Current {
			t.Fatalf("the plugin that runs collie ask --hook:\n%s", old)
		}
	})
}

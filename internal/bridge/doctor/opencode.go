package doctor

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/collie-linux/collie/internal/agent/ask"
	"github.com/collie-linux/collie/internal/agent/ask/hook"
)

// pluginRow judges the set-up of a client whose hook is a plugin
// (OpenCode): collie's plugin file there, current, running a collie that
// exists (it denies every tool when collie cannot run), loaded once; and
// "permission": "ask" for the gated tools in the client's config files
// (where), so that without the plugin the client asks in its own window.
// open are the permissions those files leave to run unasked.
func (c *Clients) pluginRow(h *ask.HookClient, open []ask.HookEntry, where []string) Row {
	setup := "collie setup " + h.Name
	var files []string
	if c.Home != "" {
		files = append(files, h.PluginPath(c.Getenv, c.Home, ""))
	}
	if c.Project != "" && c.Project != c.Home {
		files = append(files, h.PluginPath(c.Getenv, "", c.Project))
	}
	var found []string
	var info ask.PluginInfo
	for _, path := range files {
		data, err := c.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fail("check the file's owner and mode", "cannot read %s: %v", path, err)
		}
		p := ask.ReadPlugin(data)
		if !p.Recognized {
			return warn("move it away, then "+setup, "%s is not collie's plugin: %s loads it, but it does not ask your phone", path, h.Label)
		}
		if !p.Current {
			return fail(setup, "collie's plugin in %s was changed (or comes from another collie): run %s again so that it asks your phone and denies on any failure", path, setup)
		}
		if !filepath.IsAbs(p.Collie) || !c.Executable(p.Collie) {
			return fail(setup, "the plugin in %s runs %s, which cannot be run here: %s denies every tool the plugin gates", path, p.Collie, h.Label)
		}
		found = append(found, path)
		info = p
	}
	if len(found) == 0 {
		return warn(setup, "%s is installed without collie's plugin: its tool calls are not asked on your phone", h.Label)
	}
	if len(found) > 1 {
		return warn("remove one of them (collie setup "+h.Name+" writes the user's; --project writes the project's)",
			"collie's plugin is in %s: %s loads both and asks your phone twice for each tool", strings.Join(found, " and "), h.Label)
	}
	if len(where) == 0 || len(open) > 0 {
		names := ask.OpenCodePermissions
		if len(where) > 0 {
			names = nil
			for _, e := range open {
				names = append(names, e.Command)
			}
		}
		return warn(setup, "collie's plugin is in %s, but without it %s would run %s unasked: \"permission\" is not \"ask\" for them in %s",
			found[0], h.Label, strings.Join(names, ", "), configFiles(where))
	}
	cheaper := ""
	if !hook.IsProgram(info.Collie) && hook.ProgramWith(info.Collie, c.Executable) != "" {
		cheaper = "; it runs collie ask --hook: " + setup + " again makes it run collie's hook program, which costs less CPU per tool call"
	}
	return ok("collie's plugin is in %s: %s asks your phone before it runs a command, edits a file, fetches a page or uses an MCP tool; a question waits %v, collie denies by %v, the plugin itself by %v; if collie cannot run, the plugin denies; without the plugin %s asks in its own window (\"permission\": \"ask\" in %s)%s",
		found[0], h.Label, info.Wait, hook.Deadline(info.Wait), info.Deadline, h.Label, strings.Join(where, " and "), cheaper)
}

func configFiles(files []string) string {
	if len(files) == 0 {
		return "any opencode.json (there is none)"
	}
	return strings.Join(files, " and ")
}

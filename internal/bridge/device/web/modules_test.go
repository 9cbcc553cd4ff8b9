package web

import (
	"encoding/json"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// maxModuleLines bounds a page module, as the project bounds a Go file:
// a script the page loads is read as one concern.
const maxModuleLines = 600

// shellList is sw-shell.js's SHELL, the files the service worker keeps.
func shellList(t *testing.T) []string {
	t.Helper()
	src, err := files.ReadFile("sw-shell.js")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`const SHELL = \[([^\]]*)\];`).FindSubmatch(src)
	if m == nil {
		t.Fatal("sw-shell.js has no SHELL list")
	}
	var shell []string
	if err := json.Unmarshal([]byte("["+strings.ReplaceAll(string(m[1]), "'", `"`)+"]"), &shell); err != nil {
		t.Fatal(err)
	}
	return shell
}

// TestPageModules: index.html loads one script, app.js, as a module;
// every module reached from it through its imports is a same-origin file
// that is embedded, served with a script's type, kept by the service
// worker's app shell (so the installed app opens offline) and under
// maxModuleLines lines; every page script embedded is reached; and each
// module but app.js is preloaded.
func TestPageModules(t *testing.T) {
	page, err := files.ReadFile("index.html")
	if err != nil {
		t.Fatal(err)
	}
	scripts := regexp.MustCompile(`<script[^>]*>`).FindAllString(string(page), -1)
	if want := `<script type="module" src="/app.js">`; len(scripts) != 1 || scripts[0] != want {
		t.Fatalf("index.html's scripts are %q, want just %s", scripts, want)
	}
	// Every module is preloaded, so the browser fetches them side by side
	// instead of one level of imports after another.
	var preloaded []string
	for _, m := range regexp.MustCompile(`<link rel="modulepreload" href="/([^"]*)">`).FindAllStringSubmatch(string(page), -1) {
		preloaded = append(preloaded, m[1])
	}
	if want := modules[1:]; !slices.Equal(preloaded, want) {
		t.Errorf("index.html preloads %q, want the modules app.js imports, %q", preloaded, want)
	}
	importRE := regexp.MustCompile(`(?m)^import \{[^}]*\} from '([^']*)';$`)
	anyImport := regexp.MustCompile(`\bimport\b\s*[({'"*]|\bimport\(|\bimportScripts\b`)
	shell := shellList(t)
	reached := map[string]bool{}
	queue := []string{"app.js"}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if reached[name] {
			continue
		}
		reached[name] = true
		b, err := files.ReadFile(name)
		if err != nil {
			t.Errorf("the page imports %s, which is not embedded: %v", name, err)
			continue
		}
		if n := strings.Count(string(b), "\n"); n > maxModuleLines {
			t.Errorf("%s is %d lines, more than %d: split it by concern", name, n, maxModuleLines)
		}
		a, ok := routes()["/"+name]
		if !ok || a.contentType != "text/javascript; charset=utf-8" {
			t.Errorf("%s is not served as a script: %+v", name, ok)
		}
		if !slices.Contains(shell, "/"+name) {
			t.Errorf("%s is not in the service worker's SHELL: the installed app would not open offline", name)
		}
		imports := importRE.FindAllStringSubmatch(string(b), -1)
		if n := len(anyImport.FindAllString(string(b), -1)); n != len(imports) {
			t.Errorf("%s has %d imports, %d of the form import { … } from './name.js';", name, n, len(imports))
		}
		for _, m := range imports {
			dep, ok := strings.CutPrefix(m[1], "./")
			if !ok || strings.Contains(dep, "/") || !strings.HasSuffix(dep, ".js") {
				t.Errorf("%s imports %q: a page module imports only ./<name>.js, a file of its own", name, m[1])
				continue
			}
			queue = append(queue, dep)
		}
	}
	all, err := fs.Glob(files, "*.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range all {
		if strings.HasPrefix(name, "sw-") {
			continue // the service worker's parts, served as /sw.js
		}
		if !reached[name] {
			t.Errorf("%s is embedded but the page never imports it", name)
		}
	}
	if len(reached) != len(modules) {
		t.Errorf("the page loads %d modules, web.go serves %d: %v", len(reached), len(modules), modules)
	}
}

package hook

import (
	"os"
	"path/filepath"
	"testing"
)

// TestProgramFor: the hook program and collie find each other as a
// build's bin folder and a package lay them out, and nothing else.
func TestProgramFor(t *testing.T) {
	root := t.TempDir()
	put := func(p string, mode os.FileMode) string {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A build: bin/collie and bin/collie-hook.
	collie, prog := put("bin/collie", 0o755), put("bin/collie-hook", 0o755)
	if ProgramFor(collie) != prog || CollieFor(prog) != collie {
		t.Fatalf("bin: %q %q", ProgramFor(collie), CollieFor(prog))
	}
	// A package: usr/bin/collie and usr/libexec/collie/collie-hook.
	collie, prog = put("usr/bin/collie", 0o755), put("usr/libexec/collie/collie-hook", 0o755)
	if ProgramFor(collie) != prog || CollieFor(prog) != collie {
		t.Fatalf("usr: %q %q", ProgramFor(collie), CollieFor(prog))
	}
	// A collie alone, and a hook program no one may run.
	alone := put("opt/collie", 0o755)
	put("local/bin/collie-hook", 0o644)
	if ProgramFor(alone) != "" || ProgramFor(put("local/bin/collie", 0o755)) != "" {
		t.Fatal("a hook program found where there is none to run")
	}
	if !IsProgram(prog) || IsProgram(collie) {
		t.Fatal("IsProgram")
	}
}

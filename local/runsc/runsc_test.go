package runsc

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbxdev/sbx/internal/testenv"
)

// pinned returns the runsc the test script built, failing in CI when it is missing.
func pinned(t *testing.T) string {
	path := os.Getenv("SBX_RUNSC")
	if path == "" {
		testenv.Missing(t, "SBX_RUNSC is not set; scripts/test.sh builds runsc and sets it")
	}
	return path
}

func TestFindAndVersionOfThePinnedBuild(t *testing.T) {
	path, err := Find(pinned(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	v, err := Version(context.Background(), "runsc", path)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile("../../tools/runsc/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mod), "gvisor.dev/gvisor "+v+"\n") {
		t.Fatalf("runsc reports version %q, not the gvisor.dev/gvisor version pinned in tools/runsc/go.mod", v)
	}
}

func TestFindLooksInTheDataDir(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin", "runsc")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	os.WriteFile(bin, []byte("#!/bin/sh\necho 'runsc version fake-1'\n"), 0o755)
	got, err := Find("", dir)
	if err != nil || got != bin {
		t.Fatalf("Find = %q, %v; want %s", got, err, bin)
	}
	if v, err := Version(context.Background(), "runsc", got); err != nil || v != "fake-1" {
		t.Fatalf("Version = %q, %v", v, err)
	}
	os.WriteFile(bin, []byte("#!/bin/sh\necho hello\n"), 0o755)
	if _, err := Version(context.Background(), "runsc", bin); err == nil || !strings.Contains(err.Error(), "not \"runsc version") {
		t.Fatalf("a binary that is not runsc: %v", err)
	}
	if _, err := Find(filepath.Join(dir, "nope"), dir); err == nil {
		t.Fatal("an explicit path that does not exist was accepted")
	}
	os.Chmod(bin, 0o644)
	if _, err := Find(bin, dir); err == nil || !strings.Contains(err.Error(), "not an executable") {
		t.Fatalf("a file that is not executable: %v", err)
	}
}

// Every command gets --root and its runtime's flags, then the sandbox's own.
func TestFlagsOfEachRuntime(t *testing.T) {
	gvisor := Runsc{Path: "runsc", Root: "/r"}
	if got := gvisor.Command(context.Background(), []string{"--x"}, "state", "a").Args[1:]; strings.Join(got, " ") != "--root /r --platform systrap --x state a" {
		t.Errorf("runsc: %q", got)
	}
	runc := Runsc{Path: "runc", Root: "/r", Runtime: Runc}
	if got := runc.Command(context.Background(), nil, "state", "a").Args[1:]; strings.Join(got, " ") != "--root /r state a" {
		t.Errorf("runc: %q", got)
	}
	if gvisor.Name() != "runsc" || runc.Name() != "runc" {
		t.Errorf("names %s, %s", gvisor.Name(), runc.Name())
	}
}

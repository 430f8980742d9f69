// Package runsc finds gVisor's runsc binary and asks it what it is. It is the
// local provider's only door to runsc.
package runsc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Find returns the runsc to use: explicit when set, else <dataDir>/bin/runsc
// (where setup builds it), else runsc on PATH.
func Find(explicit, dataDir string) (string, error) {
	if explicit != "" {
		return executable(explicit)
	}
	inData := filepath.Join(dataDir, "bin", "runsc")
	if path, err := executable(inData); err == nil {
		return path, nil
	}
	if path, err := exec.LookPath("runsc"); err == nil {
		return path, nil
	}
	return "", fmt.Errorf("runsc is not in %s nor on PATH; build it with scripts/setup.sh or name one with --runsc", inData)
}

func executable(path string) (string, error) {
	info, err := os.Stat(path)
	switch {
	case err != nil:
		return "", fmt.Errorf("runsc %s: %w", path, errors.Unwrap(err))
	case info.IsDir() || info.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("runsc %s is not an executable file", path)
	}
	return filepath.Abs(path)
}

// Version runs `runsc --version` and returns the version it reports.
func Version(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("runsc %s does not run: %v: %s", path, err, strings.TrimSpace(string(out)))
	}
	first, _, _ := strings.Cut(string(out), "\n")
	version, ok := strings.CutPrefix(first, "runsc version ")
	if !ok || version == "" {
		return "", fmt.Errorf("runsc %s answered --version with %q, not \"runsc version …\"", path, first)
	}
	return version, nil
}

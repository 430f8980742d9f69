// Package runsc finds gVisor's runsc binary and asks it what it is. It is the
// local provider's only door to runsc, and to runc on hosts that run their
// sandboxes with it.
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

// Version runs `<path> --version` and returns the version it reports, which
// must be name's (runsc or runc).
func Version(ctx context.Context, name, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s does not run: %v: %s", name, path, err, strings.TrimSpace(string(out)))
	}
	first, _, _ := strings.Cut(string(out), "\n")
	version, ok := strings.CutPrefix(first, name+" version ")
	if !ok || version == "" {
		return "", fmt.Errorf("%s %s answered --version with %q, not \"%s version …\"", name, path, first, name)
	}
	return version, nil
}

package runsc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Runsc runs one runsc binary with one set of top-level flags. Every command
// of a sandbox's life must get the same flags: restore requires it.
type Runsc struct {
	Path     string
	Root     string // runsc's state directory
	Platform string // default systrap (the KVM platform hangs on these hosts)
}

// flags are the top-level flags of every call, plus extra per-sandbox ones.
func (r Runsc) flags(extra ...string) []string {
	platform := r.Platform
	if platform == "" {
		platform = "systrap"
	}
	return append([]string{"--root", r.Root, "--platform", platform}, extra...)
}

// Run runs runsc with top-level flags extra, then args, and returns stdout.
func (r Runsc) Run(ctx context.Context, extra []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, r.Path, append(r.flags(extra...), args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	return r.wait(cmd, args[0], &out, &errOut)
}

// Start runs `runsc run --detach` for a bundle with the sandbox's own output
// (and runsc's complaints) appended to the file output: a pipe would be held
// open by the sandbox and never reach EOF.
func (r Runsc) Start(ctx context.Context, extra []string, bundle, id string, output *os.File) error {
	cmd := exec.CommandContext(ctx, r.Path, append(r.flags(extra...), "run", "--detach", "--bundle", bundle, id)...)
	cmd.Stdout, cmd.Stderr = output, output
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("runsc run: %v: %s", err, tail(output.Name(), 5))
	}
	return nil
}

// tail returns the last n lines of a file, joined.
func tail(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func (r Runsc) wait(cmd *exec.Cmd, verb string, out, errOut *bytes.Buffer) ([]byte, error) {
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errOut.String())
		if msg == "" {
			msg = strings.TrimSpace(out.String())
		}
		return out.Bytes(), fmt.Errorf("runsc %s: %v: %s", verb, err, msg)
	}
	return out.Bytes(), nil
}

// Container is one entry of `runsc list`.
type Container struct {
	ID     string `json:"id"`
	Status string `json:"status"` // created, running, paused, stopped
	Bundle string `json:"bundle"`
	PID    int    `json:"pid"`
}

// List returns the containers under the runsc root.
func (r Runsc) List(ctx context.Context) ([]Container, error) {
	out, err := r.Run(ctx, nil, "list", "--format=json")
	if err != nil {
		return nil, err
	}
	var cs []Container
	if err := json.Unmarshal(bytes.TrimSpace(out), &cs); err != nil {
		return nil, fmt.Errorf("runsc list: %w", err)
	}
	return cs, nil
}

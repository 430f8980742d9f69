package runsc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// Runsc runs one runsc binary with one set of top-level flags. Every command
// of a sandbox's life must get the same flags: restore requires it.
type Runsc struct {
	Path    string
	Root    string  // the runtime's state directory
	Runtime Runtime // which runtime Path is; default Gvisor
}

// Runtime is an OCI runtime whose commands for a container's life (run,
// state, list, pause, resume, events, delete) are runsc's: its name in
// messages, and the top-level flags every command gets after --root.
type Runtime struct {
	Name  string
	Flags []string
}

var (
	// Gvisor is runsc on the systrap platform (the KVM platform hangs on
	// these hosts).
	Gvisor = Runtime{Name: "runsc", Flags: []string{"--platform", "systrap"}}
	// Runc is runc: runsc's commands without gVisor's flags.
	Runc = Runtime{Name: "runc"}
)

func (r Runsc) runtime() Runtime {
	if r.Runtime.Name == "" {
		return Gvisor
	}
	return r.Runtime
}

// Name is the runtime's name in messages: runsc or runc.
func (r Runsc) Name() string { return r.runtime().Name }

// flags are the top-level flags of every call, plus extra per-sandbox ones.
func (r Runsc) flags(extra ...string) []string {
	return slices.Concat([]string{"--root", r.Root}, r.runtime().Flags, extra)
}

// Command is runsc with the top-level flags, extra, then args, unstarted,
// for a caller that wires its own input and output (`exec` of a stream).
func (r Runsc) Command(ctx context.Context, extra []string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, r.Path, append(r.flags(extra...), args...)...)
}

// Run runs runsc with top-level flags extra, then args, and returns stdout.
func (r Runsc) Run(ctx context.Context, extra []string, args ...string) ([]byte, error) {
	cmd := r.Command(ctx, extra, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	return r.wait(cmd, args[0], &out, &errOut)
}

// Start runs a command that starts a sandbox (`run --detach …` or `restore
// --detach …`) with the sandbox's own output, and runsc's complaints,
// appended to the file output: a pipe would be held open by the sandbox and
// never reach EOF. A failure carries the last lines of output.
func (r Runsc) Start(ctx context.Context, extra []string, output *os.File, args ...string) error {
	return r.StartWith(ctx, extra, output, nil, args...)
}

// StartWith is Start with files open in runsc as descriptors 3, 4, … (for
// `--pass-fd` or runc's `--preserve-fds`).
func (r Runsc) StartWith(ctx context.Context, extra []string, output *os.File, files []*os.File, args ...string) error {
	cmd := r.Command(ctx, extra, args...)
	cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = output, output, files
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", r.Name(), args[0], err, strings.Join(Tail(output.Name(), 5), " | "))
	}
	return nil
}

// Tail returns the last n non-empty lines of a file.
func Tail(path string, n int) []string {
	data, _ := os.ReadFile(path)
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	return lines[max(len(lines)-n, 0):]
}

func (r Runsc) wait(cmd *exec.Cmd, verb string, out, errOut *bytes.Buffer) ([]byte, error) {
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errOut.String())
		if msg == "" {
			msg = strings.TrimSpace(out.String())
		}
		if gone(msg) {
			err = fs.ErrNotExist
		}
		return out.Bytes(), fmt.Errorf("%s %s: %w: %s", r.Name(), verb, err, msg)
	}
	return out.Bytes(), nil
}

// gone reports whether a complaint says the container does not exist.
func gone(msg string) bool {
	return strings.Contains(msg, "does not exist") || strings.Contains(msg, "container not found")
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
		return nil, fmt.Errorf("%s list: %w", r.Name(), err)
	}
	return cs, nil
}

// State is what `runsc state` says of a container.
type State struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	PID    int    `json:"pid"` // the sandbox process on the host
}

// State returns a container's state; runsc checks that its sandbox is alive.
// An error wrapping fs.ErrNotExist means there is no such container. runsc
// also answers for the one container whose ID id is a prefix of, so callers
// compare the ID.
func (r Runsc) State(ctx context.Context, id string) (State, error) {
	out, err := r.Run(ctx, nil, "state", id)
	if err != nil {
		return State{}, err
	}
	var st State
	if err := json.Unmarshal(out, &st); err != nil {
		return State{}, fmt.Errorf("%s state: %w", r.Name(), err)
	}
	return st, nil
}

// Stats is the part of `runsc events --stats` that sbx reports.
type Stats struct {
	CPU struct {
		Usage struct {
			Total uint64 `json:"total"` // nanoseconds
		} `json:"usage"`
	} `json:"cpu"`
	Memory struct {
		Usage struct {
			Usage uint64 `json:"usage"`
		} `json:"usage"`
	} `json:"memory"`
	Pids struct {
		Current uint64 `json:"current"`
	} `json:"pids"`
	Interfaces []struct {
		Name    string `json:"Name"`
		RxBytes uint64 `json:"RxBytes"`
		TxBytes uint64 `json:"TxBytes"`
	} `json:"network_interfaces"`
}

// Stats returns a container's resource use, measured inside gVisor (by runc:
// from the container's cgroups).
func (r Runsc) Stats(ctx context.Context, id string) (Stats, error) {
	out, err := r.Run(ctx, nil, "events", "--stats", id)
	if err != nil {
		return Stats{}, err
	}
	var ev struct {
		Data Stats `json:"data"`
	}
	if err := json.Unmarshal(out, &ev); err != nil {
		return Stats{}, fmt.Errorf("%s events --stats: %w", r.Name(), err)
	}
	return ev.Data, nil
}

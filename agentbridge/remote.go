// Package agentbridge serves sbx's agent API (apiv1/agent.go) for a
// sandbox that runs another daemon in its place (E2B's envd, OpenSandbox's
// execd), in serve's own process, over a Remote: that daemon's client, as
// a provider package implements it. serve reaches the bridge as it reaches
// any agent (the provider answers its address on an internal/pipenet
// listener, which no other process reaches), so sbx's API, CLI, SDKs and
// SSH gateway drive such sandboxes as they drive their own.
//
// The bridge keeps what the daemons do not: the processes it started, each
// read to its end in the background with its last 4 MiB of output kept
// for whoever streams or attaches and its end remembered; the agent's
// error envelope; the agent's validation. What a Remote cannot do it
// answers with an *apiv1.Error naming it (a 501, or a 400 for a value it
// does not take), which the bridge passes on.
package agentbridge

import (
	"context"
	"io"

	"github.com/sbxdev/sbx/apiv1"
)

// Remote is a sandbox's daemon, as a bridge drives it. Errors that are the
// caller's (a missing file, a bad value) are *apiv1.Error with the agent's
// status; any other is answered as a 502.
type Remote interface {
	// Ready returns nil once the daemon answers.
	Ready(ctx context.Context) error

	// Start starts a process, returning once the daemon named its PID.
	// Its Process is read to its end (ctx ends only the wait for the PID).
	Start(ctx context.Context, c Command) (Process, error)
	// Attach follows a process the bridge did not start, from now on.
	Attach(ctx context.Context, pid int) (Process, error)
	// Processes lists the processes the daemon runs.
	Processes(ctx context.Context) ([]apiv1.CommandInfo, error)
	// Input writes to a process's stdin (its terminal's, when pty).
	Input(ctx context.Context, pid int, data []byte, pty bool) error
	CloseStdin(ctx context.Context, pid int) error
	// Signal sends a signal by the name a SignalRequest gives (TERM, KILL, 15…).
	Signal(ctx context.Context, pid int, signal string) error
	Resize(ctx context.Context, pid int, size apiv1.PtySize) error

	// Read opens a file.
	Read(ctx context.Context, path string) (io.ReadCloser, error)
	// Write writes r to path as user ("": the daemon's default), making
	// its parents.
	Write(ctx context.Context, path, user string, r io.Reader) error
	Stat(ctx context.Context, path, user string) (apiv1.EntryInfo, error)
	// List lists a directory's entries to depth levels.
	List(ctx context.Context, path string, depth int) ([]apiv1.EntryInfo, error)
	// MakeDir makes a directory and its parents as user; existed says it
	// was there already.
	MakeDir(ctx context.Context, path, user string) (existed bool, err error)
	Move(ctx context.Context, from, to string) error
	// Remove removes a path, recursively.
	Remove(ctx context.Context, path string) error
	// Watch streams changes under a directory until ctx ends.
	Watch(ctx context.Context, path string, recursive bool) (Watch, error)
}

// Finder is a Remote that finds a process by PID that it does not list
// (a daemon without a list of its processes: one started before serve
// restarted is found by its PID, not its tag).
type Finder interface {
	Find(ctx context.Context, pid int) (apiv1.CommandInfo, error)
}

// Command is what a command or a terminal asks of Remote.Start.
type Command struct {
	User    string // "": the daemon's default
	Program string
	Args    []string
	Env     map[string]string
	Cwd     string // "": the daemon's default
	Tag     string
	Stdin   bool           // keep stdin open for Input
	Pty     *apiv1.PtySize // a terminal of this size
	Timeout int64          // seconds after which the daemon kills it; 0: none
}

// Process is a started or attached process's output, in order, to its end.
type Process interface {
	PID() int
	// Next returns its next event: output (Stdout, Stderr), then its End;
	// an error when the daemon's stream broke.
	Next() (Event, error)
	Close() error
}

// Event is a piece of a process's output, or its end.
type Event struct {
	Stdout, Stderr []byte // a terminal's output is Stdout
	End            *End
}

// End is how a process ended.
type End struct {
	ExitCode int    // -1 when a signal killed it
	Signal   string // the signal's name without SIG, e.g. KILL
	Error    string // why, other than by exiting (a timeout)
}

// Watch is a stream of file events.
type Watch interface {
	Next() (apiv1.FileEvent, error)
	Close() error
}

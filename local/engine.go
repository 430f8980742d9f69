package local

import (
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sbxdev/sbx/local/runsc"
)

// The engines a host can run its sandboxes with.
const (
	// EngineRunsc runs each sandbox in gVisor: the default, for code sbx
	// does not trust (runsc.go).
	EngineRunsc = "runsc"
	// EngineRunc runs each sandbox as a plain Linux container, for trusted
	// work: it shares the host's kernel, cannot hibernate (no checkpoint
	// without CRIU), offers no GPU sharing (that is gVisor's nvproxy) and its
	// writable layer is not size-capped (runc.go).
	EngineRunc = "runc"
)

// engine is what differs between the runtimes a host can run its sandboxes
// with; New picks one from Config.Engine, and the provider does the rest
// (records, network, cgroups, GPU placement, the bundle, the agent and its
// token, the commands of a container's life through runsc.Runsc) the same
// way for both. A data dir's sandboxes all run with one engine.
type engine interface {
	// name is the engine's name (EngineRunsc, EngineRunc), recorded with
	// each sandbox.
	name() string
	// command runs the engine's binary, with its state in its own
	// directory of the data dir.
	command() runsc.Runsc
	// flags are a new sandbox's own top-level flags, recorded with it and
	// given to every command that starts or checkpoints it: how its
	// writable layer is kept and capped at diskMB, and, unless networked
	// (it has a namespace of sbx's), that it has no network.
	flags(id string, diskMB int64, networked bool) []string
	// root makes a new sandbox's root from the template's tree lower and
	// returns the path its bundle names.
	root(id, lower string) (string, error)
	// removeRoot undoes root, before the sandbox's directory goes; a sandbox
	// that has none is fine.
	removeRoot(id string) error
	// adapt adapts a sandbox's spec (OCISpec's) to the engine.
	adapt(s *specs.Spec)
	// passFiles are the flags of `run` that give the sandbox's first
	// process the command's first n ExtraFiles as the same descriptors, 3
	// on.
	passFiles(n int) []string
	// hibernate is nil if the engine checkpoints and restores sandboxes,
	// else why not: a Hibernate's answer.
	hibernate() error
	// shareGPUs is nil if the engine gives sandboxes GPU shares, else why
	// not: a GPU sandbox's admission's answer.
	shareGPUs() error
	// layerUsed is what a sandbox's writable layer holds on disk now.
	layerUsed(id string) int64
}

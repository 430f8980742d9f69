package capability

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Sandbox is what materializing needs of a sandbox's agent.
type Sandbox interface {
	// WriteFile writes data to the absolute path, making its parents.
	WriteFile(ctx context.Context, path string, data []byte, mode fs.FileMode) error
	// Run runs a shell script with env added to the sandbox's environment,
	// for at most timeout, and answers its exit code and output (stdout and
	// stderr). err is for a script that could not be run or waited for, not
	// for one that exited non-zero.
	Run(ctx context.Context, script string, env map[string]string, timeout time.Duration) (exitCode int, output string, err error)
}

// Step is one thing materializing did, for the sandbox's timeline.
type Step struct {
	Capability string // "" for the resolved set as a whole
	Action     string // write, check or install
	Detail     string // what, and on failure why: the error or the tail of the output
	OK         bool
}

func (s Step) String() string {
	who := s.Capability
	if who == "" {
		who = "capabilities"
	}
	status := "ok"
	if !s.OK {
		status = "failed"
	}
	return fmt.Sprintf("%s: %s %s: %s", who, s.Action, status, s.Detail)
}

// Files written besides the capabilities' own.
const (
	ResolvedFile = Root + "/resolved.json"              // the resolved set, as GET …/capabilities/resolved answers it
	EnvFile      = Root + "/env.sh"                     // exports the resolved env where not set, and BinDir on PATH
	ProfileFile  = "/etc/profile.d/sbx-capabilities.sh" // login shells source EnvFile
	outputTail   = 2000                                 // bytes of a failed script's output kept in its step
	profileText  = "[ -r " + EnvFile + " ] && . " + EnvFile + "\n"

	// scriptPrelude starts every dependency script: in the capability's
	// directory, with EnvFile sourced, so the resolved env is there under
	// the sandbox's own, as in a login shell.
	scriptPrelude = "cd \"$SBX_CAPABILITY_DIR\" || exit 1\n. ../env.sh || exit 1\n"
)

// Materialize puts the resolved set in a sandbox: each enabled capability's
// files under Root/<name> (its tools executable), a command per tool in
// BinDir, the resolved env in EnvFile (sourced by login shells), and the
// resolved view in ResolvedFile. Then, capability by capability, for each
// dependency it runs the check; when the check fails, the install and then
// the check again (whether the install succeeded or not: the check
// decides). Scripts run in the capability's directory with EnvFile sourced
// (a variable the sandbox has wins over the resolved env) and
// SBX_CAPABILITY_NAME and SBX_CAPABILITY_DIR set. report, when not nil,
// gets each step as soon as it is done.
//
// Every failure is a Step with OK false and goes no further than what
// depends on it: the other capabilities and dependencies are still done.
// The error is ctx's, when it ended before everything was done. Materialize
// expects a fresh sandbox: files of capabilities no longer resolved are not
// removed.
func Materialize(ctx context.Context, sb Sandbox, r Resolved, report func(Step)) ([]Step, error) {
	var steps []Step
	done := func(st Step) {
		steps = append(steps, st)
		if report != nil {
			report(st)
		}
	}
	for _, c := range r.Capabilities {
		done(writeCapability(ctx, sb, r, c.Name))
		if err := ctx.Err(); err != nil {
			return steps, err
		}
	}
	done(writeResolved(ctx, sb, r))
	for _, d := range r.Dependencies {
		env := map[string]string{"SBX_CAPABILITY_NAME": d.Capability, "SBX_CAPABILITY_DIR": Dir(d.Capability)}
		run := func(action, script string, timeout time.Duration, label string) Step {
			code, out, err := sb.Run(ctx, scriptPrelude+script, env, timeout)
			st := Step{Capability: d.Capability, Action: action, OK: err == nil && code == 0}
			switch {
			case err != nil:
				st.Detail = fmt.Sprintf("%s: %v", label, err)
			case code != 0:
				st.Detail = fmt.Sprintf("%s: exit %d: %s", label, code, tail(out))
			default:
				st.Detail = label + ": ok"
			}
			return st
		}
		check := run("check", d.Check, CheckTimeout, d.Name)
		if !check.OK && d.Install == "" {
			check.Detail += " (it has no install script)"
		}
		done(check)
		if check.OK || d.Install == "" {
			continue
		}
		if err := ctx.Err(); err != nil {
			return steps, err
		}
		done(run("install", d.Install, time.Duration(d.Timeout)*time.Second, d.Name))
		if err := ctx.Err(); err != nil {
			return steps, err
		}
		// The check decides, even after an install that failed: a package
		// manager may fail on a part the dependency does not need.
		done(run("check", d.Check, CheckTimeout, d.Name+" after install"))
		if err := ctx.Err(); err != nil {
			return steps, err
		}
	}
	return steps, ctx.Err()
}

// writeCapability writes one capability's files.
func writeCapability(ctx context.Context, sb Sandbox, r Resolved, name string) Step {
	b := r.Bundles[name]
	dir := Dir(name)
	st := Step{Capability: name, Action: "write"}
	if b == nil {
		st.Detail = "its bundle was not loaded"
		return st
	}
	tools := map[string]bool{}
	for _, t := range b.Manifest.Tools {
		tools[t.Path] = true
	}
	var size int64
	for _, p := range b.Paths() {
		f := b.Files[p]
		mode := f.Mode
		if tools[p] {
			mode = 0o755
		}
		if err := sb.WriteFile(ctx, dir+"/"+p, f.Data, mode); err != nil {
			st.Detail = fmt.Sprintf("writing %s/%s: %v", dir, p, err)
			return st
		}
		size += int64(len(f.Data))
	}
	st.OK, st.Detail = true, fmt.Sprintf("%s %s: %d files (%d bytes) to %s", name, b.Manifest.Version, len(b.Files), size, dir)
	return st
}

// writeResolved writes the commands of the tools, the env files and the
// resolved view.
func writeResolved(ctx context.Context, sb Sandbox, r Resolved) Step {
	st := Step{Action: "write"}
	view, err := json.MarshalIndent(r.ResolvedCapabilities, "", "  ")
	if err != nil {
		st.Detail = err.Error()
		return st
	}
	type file struct {
		path string
		data []byte
		mode fs.FileMode
	}
	var files []file
	for _, t := range r.Tools {
		script := fmt.Sprintf("#!/bin/sh\n# %s, a tool of capability %s (sbx)\nexec %s \"$@\"\n", t.Name, t.Capability, shellQuote(t.Path))
		files = append(files, file{BinDir + "/" + t.Name, []byte(script), 0o755})
	}
	var env strings.Builder
	env.WriteString("# The environment of the capabilities resolved for this runtime (sbx). A variable\n" +
		"# already set (the runtime's env and its secrets are in the sandbox's own) wins.\n")
	fmt.Fprintf(&env, "export PATH=%s\"${PATH:+:$PATH}\"\n", shellQuote(BinDir))
	keys := make([]string, 0, len(r.Env))
	for k := range r.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&env, "[ \"${%s+set}\" = set ] || export %s=%s\n", k, k, shellQuote(r.Env[k]))
	}
	files = append(files, file{EnvFile, []byte(env.String()), 0o644}, file{ProfileFile, []byte(profileText), 0o644},
		file{ResolvedFile, append(view, '\n'), 0o644})
	for _, f := range files {
		if err := sb.WriteFile(ctx, f.path, f.data, f.mode); err != nil {
			st.Detail = fmt.Sprintf("writing %s: %v", f.path, err)
			return st
		}
	}
	st.OK = true
	st.Detail = fmt.Sprintf("resolved set of %d capabilities (%d tools, %d skills, %d MCP servers, %d prompts, %d conflicts) to %s",
		len(r.Capabilities), len(r.Tools), len(r.Skills), len(r.MCPServers), len(r.Prompts), len(r.Conflicts), ResolvedFile)
	return st
}

// tail is the end of a script's output, for a failed step: text, which a
// timeline holds (no NUL, valid UTF-8, cut between characters).
func tail(out string) string {
	out = strings.TrimSpace(strings.ToValidUTF8(strings.ReplaceAll(out, "\x00", ""), ""))
	if cut := len(out) - outputTail; cut > 0 {
		for !utf8.RuneStart(out[cut]) {
			cut++
		}
		out = "…" + out[cut:]
	}
	if out == "" {
		return "no output"
	}
	return out
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Package cli is the sbx command line: `sbx serve` and the client commands,
// one file per verb. Client commands speak only to the REST API, through
// package client; they never open the ledger.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/sbxdev/sbx"
	"github.com/spf13/cobra"
)

// Options are what an embedding program (such as the end-to-end test binary)
// adds to the command line.
type Options struct {
	Providers []sbx.Provider // extra providers for `sbx serve`
	Stdout    io.Writer
	Stderr    io.Writer
	Stdin     io.Reader
}

// Main runs the command line with args and returns the exit code.
func Main(args []string) int { return Run(args, Options{}) }

// Run is Main with options.
func Run(args []string, opts Options) int {
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.Stdin == nil {
		opts.Stdin = os.Stdin
	}
	if code, ok := askpass(args, opts.Stdout); ok { // run by ssh for `sbx sandbox ssh`
		return code
	}
	root := newRoot(opts)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var exit *exitError
	if errors.As(err, &exit) {
		return exit.code
	}
	fmt.Fprintln(opts.Stderr, "sbx:", err)
	return exitCode(err)
}

// exitError ends the program with a code and no further message.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// globals are the flags every client command shares.
type globals struct {
	opts    Options
	url     string
	apiKey  string
	json    bool
	dataDir string // for the commands that work on this host's data dir
}

func newRoot(opts Options) *cobra.Command {
	g := &globals{opts: opts}
	root := &cobra.Command{
		Use:           "sbx",
		Short:         "Self-hostable sandboxes and the ledger of what they ran and cost",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(opts.Stdout)
	root.SetErr(opts.Stderr)
	root.SetIn(opts.Stdin)
	pf := root.PersistentFlags()
	pf.StringVar(&g.url, "url", "", "API URL (default $SBX_URL or http://127.0.0.1:7070)")
	pf.BoolVar(&g.json, "json", false, "print JSON instead of tables")
	root.AddCommand(newServe(g))
	root.AddCommand(newSandbox(g), newSnapshot(g), newVolume(g), newPool(g))
	root.AddCommand(newCredits(g))
	root.AddCommand(newTemplate(g))
	root.AddCommand(newBench(g))
	root.AddCommand(newAgent(g))
	root.AddCommand(newExec(g), newShell(g), newFiles(g), newRunCode(g))
	root.AddCommand(newOrg(g), newWorkspace(g), newProject(g), newMember(g), newKey(g))
	root.AddCommand(newRuntime(g))
	root.AddCommand(newSecret(g), newSSHKey(g), newEvents(g), newWebhook(g))
	root.AddCommand(newCapability(g))
	root.AddCommand(newVersion(g), newSummary(g))
	root.AddCommand(newMCP(g))
	root.AddCommand(newKubernetes(g))
	return root
}

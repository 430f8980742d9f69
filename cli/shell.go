package cli

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// newShell is `sbx shell ID`.
func newShell(g *globals) *cobra.Command {
	var pf procFlags
	var command string
	cmd := &cobra.Command{
		Use:   "shell ID",
		Short: "Open an interactive shell in a sandbox, like docker exec -it",
		Long: "Open a terminal in a sandbox, sized to this one, running a login shell (or --cmd), and exit with its\n" +
			"exit code. When stdin is not a terminal, what it reads is typed into an 80x24 terminal, then ^D.",
		Example: "  sbx shell sbx-abc123\n  printf 'make test\\nexit $?\\n' | sbx shell sbx-abc123",
		Args:    args("ID"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			fd, tty := terminal(g.opts.Stdin)
			cols, rows := 80, 24
			if tty {
				if w, h, err := term.GetSize(fd); err == nil {
					cols, rows = w, h
				}
			}
			output := make(chan struct{}, 1) // something was printed since the last receive
			h, err := c.Pty(args[0]).Create(ctx, client.PtyOptions{
				Cols: uint16(cols), Rows: uint16(rows), Cmd: command,
				Env: pf.env, Cwd: pf.cwd, User: pf.user, Tag: pf.tag,
				OnData: func(b []byte) {
					g.opts.Stdout.Write(b)
					select {
					case output <- struct{}{}:
					default:
					}
				},
			})
			if err != nil {
				return err
			}
			defer h.Disconnect()
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			cue := output // for typeInto's ^D; none for a terminal
			if tty {
				if old, err := term.MakeRaw(fd); err == nil {
					defer term.Restore(fd, old)
				}
				defer followSize(ctx, h, fd)()
				cue = nil
			}
			go typeInto(ctx, h, g.opts.Stdin, cue)
			res, err := h.Wait(ctx)
			if err != nil {
				return err
			}
			return exitStatus(g, res)
		}),
	}
	pf.add(cmd)
	cmd.Flags().StringVar(&command, "cmd", "", "command line to run instead of a login shell")
	return cmd
}

// terminal answers r's file descriptor when r is a terminal.
func terminal(r io.Reader) (fd int, ok bool) {
	f, ok := r.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return -1, false
	}
	return int(f.Fd()), true
}

// typeInto types what r reads into the terminal as it comes. When r is a
// script, not a terminal, output signals the terminal's output, and typeInto
// then types ^D (end of input) as a person would, at each prompt, until ctx
// ends: once output has been quiet for settle, and again each time new output
// has (a nested shell took the ^D and exited, and the one that started it
// prompts again).
//
// Input that does not end with a newline gets one, as a person would press
// Enter on its last line: readline takes a ^D on a line with text on it for
// "delete the character under the cursor", so without it bash never ends.
//
// A ^D ends input only for a program that reads it at an empty line, in the
// terminal mode it arrived in, so typed ahead of a busy shell it is misread.
// One that arrives while readline (raw mode) still works through earlier
// lines stays a plain 0x04, which a shell those lines start (sh, cooked mode)
// reads as text: "sh: 1: ^D: not found", status 127. One that arrives while
// the terminal is cooked between commands may reach the next line editor as a
// NUL, or be dropped. Quiet output is only a guess at a prompt, so a ^D that
// no output follows (misread so, or it only ended a line that had no newline)
// is typed again after unheard, then twice as long each time.
func typeInto(ctx context.Context, h *client.PtyHandle, r io.Reader, output <-chan struct{}) {
	buf := make([]byte, 32<<10)
	last := byte('\n')
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if h.Write(ctx, buf[:n]) != nil {
				return
			}
			last = buf[n-1]
		}
		if err != nil {
			break
		}
	}
	if output != nil && last != '\n' && last != '\r' && h.Write(ctx, []byte{'\n'}) != nil {
		return
	}
	if output == nil {
		return
	}
	wait := time.NewTimer(settle)
	defer wait.Stop()
	again := unheard
	for {
		select {
		case <-output:
			wait.Reset(settle)
			again = unheard
		case <-wait.C:
			if h.Write(ctx, []byte{4}) != nil {
				return
			}
			wait.Reset(again)
			again = min(2*again, maxUnheard)
		case <-ctx.Done():
			return
		}
	}
}

// The pace of typeInto's ^D.
const (
	settle     = 250 * time.Millisecond // quiet output taken for a prompt
	unheard    = time.Second            // then a ^D no output followed is typed again
	maxUnheard = 30 * time.Second
)

// followSize resizes the terminal whenever the local one (fd) is, until the
// returned stop is called.
func followSize(ctx context.Context, h *client.PtyHandle, fd int) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGWINCH)
	go func() {
		for range ch {
			if cols, rows, err := term.GetSize(fd); err == nil {
				h.Resize(ctx, uint16(cols), uint16(rows))
			}
		}
	}()
	return func() { signal.Stop(ch); close(ch) }
}

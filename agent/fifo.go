package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// A sandbox whose first process cannot be handed a descriptor or a stdin
// (a Kubernetes pod: its runtime passes no descriptor, and stdin is written
// only through pods/attach) gets its token through a FIFO instead: the
// agent, started with --token-fifo PATH, makes PATH (mode 0600, in a
// directory of mode 0700, both root's) and blocks reading it; the provider
// runs `agent give-token PATH` in the sandbox (pods/exec) with the token on
// its stdin, which writes it there. The agent removes the FIFO once read.
// Nothing else runs in the sandbox before the agent has its token, and the
// token is in no environment, argv or file that stays.

// giveTokenWait bounds how long give-token waits for the agent's FIFO.
const giveTokenWait = 30 * time.Second

// readTokenFIFO makes the FIFO at path and reads the token from it.
func readTokenFIFO(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", usageError{"--token-fifo must be an absolute path"}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("agent: the token FIFO's directory: %w", err)
	}
	os.Remove(path) // one left by an earlier agent of this sandbox
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		return "", fmt.Errorf("agent: making the token FIFO %s: %w", path, err)
	}
	defer os.Remove(path)
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0) // blocks until give-token opens it
	if err != nil {
		return "", fmt.Errorf("agent: opening the token FIFO %s: %w", path, err)
	}
	return ReadToken(fd)
}

// giveToken is `agent give-token PATH`: the token read from stdin, written
// to the FIFO at PATH that an agent reads, once there is one.
func giveToken(ctx context.Context, args []string, _ io.Writer) error {
	if len(args) != 1 || !filepath.IsAbs(args[0]) {
		return usageError{"give-token needs the absolute path of the agent's token FIFO"}
	}
	token, err := ReadToken(0)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, giveTokenWait)
	defer cancel()
	for {
		f, err := openFIFO(args[0])
		if err == nil {
			_, err = f.WriteString(token + "\n")
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			return err
		}
		if !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ENXIO) {
			return err
		}
		select { // no FIFO yet, or no agent reading it yet
		case <-ctx.Done():
			return fmt.Errorf("no agent read the token FIFO %s within %s: %w", args[0], giveTokenWait, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// openFIFO opens path for writing if it is a FIFO of root's with mode 0600
// that a reader has open: not a file, a link or another's FIFO.
func openFIFO(path string) (*os.File, error) {
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), path)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO || st.Uid != 0 || st.Mode&0o077 != 0 {
		f.Close()
		return nil, fmt.Errorf("%s is not the agent's token FIFO", path)
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// pipe is `agent pipe PORT`: stdin and stdout joined to a TCP connection to
// PORT on the sandbox's loopback, until either side ends. A provider whose
// sandboxes serve cannot reach by address tunnels a connection through it
// (Kubernetes' pods/exec, where the runtime's port-forward does not reach
// gVisor's network stack).
func pipe(ctx context.Context, args []string, _ io.Writer) error {
	if len(args) != 1 {
		return usageError{"pipe needs one port"}
	}
	port, err := strconv.Atoi(args[0])
	if err != nil || port < 1 || port > 65535 {
		return usageError{"pipe needs one port"}
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	go func() {
		io.Copy(conn, os.Stdin)
		conn.(*net.TCPConn).CloseWrite()
	}()
	io.Copy(os.Stdout, conn)
	return nil
}

// Package kernel runs a Jupyter kernel (ipykernel, from the template's own
// Debian packages) and speaks the Jupyter messaging protocol (5.3) to it
// over ZeroMQ (github.com/go-zeromq/zmq4, in pure Go): an execute request
// on the shell channel, its output as the iopub channel publishes it, an
// interrupt by SIGINT, a restart by starting it again. The agent's code
// contexts (agent/code.go) stand on it. The kernel listens on Unix sockets
// in a directory of its own user's, and every message is signed with a key
// of its own (HMAC-SHA256), as the protocol asks.
package kernel

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-zeromq/zmq4"
)

// Spec says how to start a kernel: its argv, where {connection_file}
// stands for the connection file Start writes, and its process's working
// directory, environment and credential.
type Spec struct {
	Argv       []string
	Dir        string
	Env        []string
	Credential *syscall.Credential
	Stderr     io.Writer // the kernel process's own output; nil: discarded
	// Launch, when set, starts the kernel's process: it calls start, which
	// starts it and answers its PID, and answers a channel that receives
	// its wait status when it exits. A parent that reaps every child (the
	// agent, as PID 1) passes its reaper; nil: the process is waited for
	// here.
	Launch func(start func() (int, error)) (<-chan syscall.WaitStatus, error)
}

// Kernel is a running kernel.
type Kernel struct {
	cmd     *exec.Cmd
	key     []byte
	session string
	dir     string // holds the connection file and the sockets
	shell   zmq4.Socket
	iopub   zmq4.Socket
	cancel  context.CancelFunc

	run sync.Mutex // one execution at a time

	mu     sync.Mutex
	listen chan message // the current execution's iopub messages
	parent string       // and the msg_id they answer

	exited chan struct{}
	err    error // why the process ended, once exited is closed
}

// message is a Jupyter message, its content left raw.
type message struct {
	Header   header          `json:"header"`
	Parent   header          `json:"parent_header"`
	Metadata map[string]any  `json:"metadata"`
	Content  json.RawMessage `json:"content"`
}

type header struct {
	MsgID    string `json:"msg_id"`
	Session  string `json:"session"`
	Username string `json:"username"`
	Date     string `json:"date"`
	MsgType  string `json:"msg_type"`
	Version  string `json:"version"`
}

// startTimeout bounds how long Start waits for a new kernel to answer.
const startTimeout = 60 * time.Second

// Start starts a kernel and waits until it answers on its shell and
// iopub channels.
func Start(ctx context.Context, spec Spec) (*Kernel, error) {
	dir, err := os.MkdirTemp("", "sbx-kernel-")
	if err != nil {
		return nil, err
	}
	k := &Kernel{key: []byte(randomHex(32)), session: randomHex(16), dir: dir, exited: make(chan struct{})}
	// With the ipc transport a channel's socket is the file ip-port.
	conn := map[string]any{"transport": "ipc", "ip": k.socket(), "signature_scheme": "hmac-sha256", "key": string(k.key),
		"shell_port": shellPort, "iopub_port": iopubPort, "stdin_port": 3, "control_port": 4, "hb_port": 5}
	file := filepath.Join(dir, "kernel.json")
	data, _ := json.Marshal(conn)
	if err := os.WriteFile(file, data, 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if spec.Credential != nil {
		os.Chown(dir, int(spec.Credential.Uid), int(spec.Credential.Gid))
		os.Chown(file, int(spec.Credential.Uid), int(spec.Credential.Gid))
	}
	argv := make([]string, len(spec.Argv))
	for i, a := range spec.Argv {
		argv[i] = strings.ReplaceAll(a, "{connection_file}", file)
	}
	k.cmd = exec.Command(argv[0], argv[1:]...)
	k.cmd.Dir, k.cmd.Env = spec.Dir, spec.Env
	k.cmd.Stdout, k.cmd.Stderr = spec.Stderr, spec.Stderr
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: spec.Credential, Pdeathsig: syscall.SIGKILL}
	launch := spec.Launch
	if launch == nil {
		launch = waitHere
	}
	exit, err := launch(func() (int, error) {
		if err := k.cmd.Start(); err != nil {
			return 0, err
		}
		return k.cmd.Process.Pid, nil
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting the kernel %s: %w", argv[0], err)
	}
	go func() {
		ws := <-exit
		k.err = exitError(ws)
		close(k.exited)
	}()
	sockCtx, cancel := context.WithCancel(context.Background())
	k.cancel = cancel
	k.shell = zmq4.NewDealer(sockCtx, zmq4.WithID(zmq4.SocketIdentity(k.session)), zmq4.WithDialerMaxRetries(0))
	k.iopub = zmq4.NewSub(sockCtx, zmq4.WithDialerMaxRetries(0))
	if err := k.dial(); err != nil {
		k.Close()
		return nil, err
	}
	go k.readIOPub()
	ready, cancelReady := context.WithTimeout(ctx, startTimeout)
	defer cancelReady()
	if err := k.awaitReady(ready); err != nil {
		k.Close()
		return nil, err
	}
	return k, nil
}

// The channels' "ports": the suffixes of their sockets' files.
const (
	shellPort = 1
	iopubPort = 2
)

// socket is the prefix of the kernel's sockets' files.
func (k *Kernel) socket() string { return filepath.Join(k.dir, "kernel") }

func (k *Kernel) dial() error {
	deadline := time.Now().Add(startTimeout)
	for _, d := range []struct {
		s    zmq4.Socket
		port int
	}{{k.shell, shellPort}, {k.iopub, iopubPort}} {
		for {
			err := d.s.Dial(fmt.Sprintf("%s://%s-%d", transportName, k.socket(), d.port))
			if err == nil {
				break
			}
			select {
			case <-k.exited:
				return fmt.Errorf("the kernel exited as it started: %v", k.err)
			case <-time.After(100 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the kernel did not listen within %s: %w", startTimeout, err)
			}
		}
	}
	return k.iopub.SetOption(zmq4.OptionSubscribe, "")
}

// awaitReady asks for the kernel's info until it answers and its status
// reaches iopub (a subscription takes a moment to hold: output published
// before it would be lost).
func (k *Kernel) awaitReady(ctx context.Context) error {
	for {
		id, events := k.expect()
		if err := k.send("kernel_info_request", id, map[string]any{}); err != nil {
			return err
		}
		select {
		case <-events:
			k.stopListening()
			_, err := k.reply(ctx, id)
			return err
		case <-k.exited:
			k.stopListening()
			return fmt.Errorf("the kernel exited: %v", k.err)
		case <-ctx.Done():
			k.stopListening()
			return fmt.Errorf("the kernel did not answer within %s", startTimeout)
		case <-time.After(500 * time.Millisecond):
			k.stopListening()
		}
	}
}

// expect makes the next iopub messages answering a new msg_id come to
// the channel it answers.
func (k *Kernel) expect() (string, <-chan message) {
	ch := make(chan message, 256)
	id := randomHex(16)
	k.mu.Lock()
	k.listen, k.parent = ch, id
	k.mu.Unlock()
	return id, ch
}

func (k *Kernel) stopListening() {
	k.mu.Lock()
	k.listen, k.parent = nil, ""
	k.mu.Unlock()
}

// readIOPub passes each iopub message to the execution it answers.
func (k *Kernel) readIOPub() {
	for {
		raw, err := k.iopub.Recv()
		if err != nil {
			return
		}
		m, err := k.parse(raw.Frames)
		if err != nil {
			continue
		}
		k.mu.Lock()
		if k.listen != nil && m.Parent.MsgID == k.parent {
			select {
			case k.listen <- m:
			default: // a reader that fell this far behind has gone
			}
		}
		k.mu.Unlock()
	}
}

// send sends a request of type typ on the shell channel.
func (k *Kernel) send(typ, id string, content any) error {
	h, _ := json.Marshal(header{MsgID: id, Session: k.session, Username: "sbx", Date: time.Now().UTC().Format(time.RFC3339Nano), MsgType: typ, Version: "5.3"})
	c, err := json.Marshal(content)
	if err != nil {
		return err
	}
	parts := [][]byte{h, []byte("{}"), []byte("{}"), c}
	return k.shell.SendMulti(zmq4.NewMsgFrom(append([][]byte{[]byte("<IDS|MSG>"), []byte(k.sign(parts))}, parts...)...))
}

// reply reads the shell channel until the reply to id.
func (k *Kernel) reply(ctx context.Context, id string) (message, error) {
	type got struct {
		m   message
		err error
	}
	for {
		ch := make(chan got, 1)
		go func() {
			raw, err := k.shell.Recv()
			if err != nil {
				ch <- got{err: err}
				return
			}
			m, err := k.parse(raw.Frames)
			ch <- got{m, err}
		}()
		select {
		case g := <-ch:
			if g.err != nil {
				return message{}, g.err
			}
			if g.m.Parent.MsgID == id {
				return g.m, nil
			}
		case <-k.exited:
			return message{}, fmt.Errorf("the kernel exited: %v", k.err)
		case <-ctx.Done():
			return message{}, ctx.Err()
		}
	}
}

// parse checks a message's signature and reads it.
func (k *Kernel) parse(frames [][]byte) (message, error) {
	i := 0
	for i < len(frames) && string(frames[i]) != "<IDS|MSG>" {
		i++
	}
	if len(frames) < i+6 {
		return message{}, errors.New("a message without its parts")
	}
	parts := frames[i+2 : i+6]
	if !hmac.Equal([]byte(k.sign(parts)), frames[i+1]) {
		return message{}, errors.New("a message with a bad signature")
	}
	var m message
	if json.Unmarshal(parts[0], &m.Header) != nil || json.Unmarshal(parts[1], &m.Parent) != nil {
		return m, errors.New("a message with a bad header")
	}
	m.Content = parts[3]
	return m, nil
}

func (k *Kernel) sign(parts [][]byte) string {
	mac := hmac.New(sha256.New, k.key)
	for _, p := range parts {
		mac.Write(p)
	}
	return hex.EncodeToString(mac.Sum(nil))
}

// Interrupt interrupts what the kernel runs (SIGINT, as Jupyter's
// default interrupt mode does): Python raises KeyboardInterrupt.
func (k *Kernel) Interrupt() error {
	return k.cmd.Process.Signal(syscall.SIGINT)
}

// Exited is closed when the kernel's process has ended; Err says why.
func (k *Kernel) Exited() <-chan struct{} { return k.exited }

// Err is why the kernel's process ended (after Exited).
func (k *Kernel) Err() error { return k.err }

// Close kills the kernel's process group and closes its channels.
func (k *Kernel) Close() error {
	if k.cmd.Process != nil {
		syscall.Kill(-k.cmd.Process.Pid, syscall.SIGKILL)
		<-k.exited
		k.cmd.Process.Release()
	}
	k.cancel()
	k.shell.Close()
	k.iopub.Close()
	return os.RemoveAll(k.dir)
}

// waitHere is Spec.Launch for a parent that reaps no other child.
func waitHere(start func() (int, error)) (<-chan syscall.WaitStatus, error) {
	pid, err := start()
	if err != nil {
		return nil, err
	}
	exit := make(chan syscall.WaitStatus, 1)
	go func() {
		var ws syscall.WaitStatus
		for {
			if _, err := syscall.Wait4(pid, &ws, 0, nil); err != syscall.EINTR {
				break
			}
		}
		exit <- ws
	}()
	return exit, nil
}

// exitError says how a kernel's process ended.
func exitError(ws syscall.WaitStatus) error {
	if ws.Signaled() {
		return fmt.Errorf("killed by signal %s", ws.Signal())
	}
	return fmt.Errorf("exited with status %d", ws.ExitStatus())
}

func randomHex(n int) string {
	b := make([]byte, n/2)
	rand.Read(b)
	return hex.EncodeToString(b)
}

package kubernetes

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/pipenet"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/remotecommand"
)

// AgentAddr implements sbx.AgentDialer.
func (p *Provider) AgentAddr(ctx context.Context, h sbx.Handle) (string, error) {
	return p.PortAddr(ctx, h, apiv1.AgentPort)
}

// PortAddr implements sbx.PortDialer: the pod's IP and port (ReachPodIP),
// or an in-process listener whose every connection is tunnelled through
// the API server (ReachAPIServer).
func (p *Provider) PortAddr(ctx context.Context, h sbx.Handle, port int) (string, error) {
	id, err := handleID(h)
	if err != nil {
		return "", err
	}
	if p.cfg.Reach == ReachAPIServer {
		return p.tunnel.addr(id, port)
	}
	ip, err := p.podIP(ctx, id)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(ip, strconv.Itoa(port)), nil
}

// podIP is the IP of id's running pod, as read last (a pause forgets it).
func (p *Provider) podIP(ctx context.Context, id string) (string, error) {
	if ip, ok := p.addrs.Load(id); ok && ip.(string) != "" {
		return ip.(string), nil
	}
	pod, err := p.pods().Get(ctx, podName(id), getOpts)
	if err != nil {
		return "", fmt.Errorf("sandbox %s has no pod: %w", id, err)
	}
	if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" {
		return "", sbx.Errorf(sbx.EConflict, "sandbox %s's pod is %s, with no address", id, pod.Status.Phase)
	}
	p.addrs.Store(id, pod.Status.PodIP)
	return pod.Status.PodIP, nil
}

// exec runs argv in the sandbox container of the pod named name, with
// stdin and stdout as given (either may be nil) and stderr kept for the
// error, through the API server's pods/exec (a WebSocket).
func (p *Provider) exec(ctx context.Context, name string, argv []string, stdin io.Reader, stdout io.Writer) error {
	u := p.client.CoreV1().ExecURL(p.cfg.Namespace, name, &corev1.PodExecOptions{Container: container, Command: argv, Stdin: stdin != nil, Stdout: stdout != nil, Stderr: true})
	ex, err := remotecommand.NewWebSocketExecutor(p.client.Config, "GET", u.String())
	if err != nil {
		return err
	}
	var stderr strings.Builder
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: &limited{w: &stderr, n: 4 << 10}})
	if err != nil && stderr.Len() > 0 {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return err
}

// giveToken hands the agent of the pod named name its token, on the stdin
// of `agent give-token` (package agent, fifo.go).
func (p *Provider) giveToken(ctx context.Context, name, token string) error {
	return p.exec(ctx, name, []string{agentBin, "agent", "give-token", tokenFIFO}, strings.NewReader(token+"\n"), nil)
}

// limited writes at most n bytes to w, dropping the rest.
type limited struct {
	w io.Writer
	n int
}

func (l *limited) Write(b []byte) (int, error) {
	if k := min(len(b), l.n); k > 0 {
		l.w.Write(b[:k])
		l.n -= k
	}
	return len(b), nil
}

// tunnels are the in-process listeners of ReachAPIServer: one per sandbox
// and port, at <id>.kubernetes.pipe:<port>, each accepted connection
// joined to a pods/exec of `agent pipe PORT` in the sandbox.
type tunnels struct {
	p  *Provider
	mu sync.Mutex
	ls map[string]map[int]net.Listener // provider ID → port → listener
}

func newTunnels(p *Provider) *tunnels { return &tunnels{p: p, ls: map[string]map[int]net.Listener{}} }

// addr is the address of id's tunnel to port, listening from now on.
func (t *tunnels) addr(id string, port int) (string, error) {
	addr := net.JoinHostPort(id+".kubernetes.pipe", strconv.Itoa(port))
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ls[id][port] != nil {
		return addr, nil
	}
	l, err := pipenet.Listen(addr)
	if err != nil {
		return "", err
	}
	if t.ls[id] == nil {
		t.ls[id] = map[int]net.Listener{}
	}
	t.ls[id][port] = l
	go t.serve(l, id, port)
	return addr, nil
}

// serve tunnels each connection l accepts until l is closed.
func (t *tunnels) serve(l net.Listener, id string, port int) {
	for {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer conn.Close()
			t.p.exec(context.Background(), podName(id), []string{agentBin, "agent", "pipe", strconv.Itoa(port)}, eofReader{conn}, conn)
		}()
	}
}

// eofReader ends where its reader fails: a tunnel's connection closed by
// its client is the end of the exec's stdin, not an error to log.
type eofReader struct{ r io.Reader }

func (e eofReader) Read(b []byte) (int, error) {
	n, err := e.r.Read(b)
	if err != nil {
		err = io.EOF
	}
	return n, err
}

// close stops id's tunnels (its pod is going); connections they made end
// with the pod.
func (t *tunnels) close(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range t.ls[id] {
		l.Close()
	}
	delete(t.ls, id)
}

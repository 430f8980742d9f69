// Package agenttest serves sbx's API in-process for tests that go through
// serve's proxy (or its SSH gateway) to a real agent: httpapi and sshgate over a lifecycle Manager over a
// SQLite ledger, and a provider (the Memory provider's records) whose every
// sandbox runs a real agent, served in this process on a loopback port.
package agenttest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/agent"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/httpapi"
	"github.com/sbxdev/sbx/internal/testenv"
	"github.com/sbxdev/sbx/ledger"
	"github.com/sbxdev/sbx/lifecycle"
	"github.com/sbxdev/sbx/providertest"
	"github.com/sbxdev/sbx/sshgate"
	"golang.org/x/crypto/ssh"
)

// Provider is the Memory provider with a real agent in each sandbox. A
// killed sandbox's agent stops taking connections but keeps those it has,
// as a killed gVisor sandbox's do: its network goes without a FIN or a
// reset, so only serve can end the streams open to it.
type Provider struct {
	*providertest.Memory
	t testing.TB

	mu      sync.Mutex
	agents  map[string]*served // by provider sandbox ID
	tokens  map[string]string  // by provider sandbox ID or snapshot: the token its agent started with
	died    func(sbx.Died)     // set while Watch runs
	inspect func(*http.Request)
}

// Inspect has f see every request that reaches an agent, as the agent gets
// it, from now on.
func (p *Provider) Inspect(f func(*http.Request)) {
	p.mu.Lock()
	p.inspect = f
	p.mu.Unlock()
}

type served struct {
	agent *agent.Agent
	ln    net.Listener
	srv   *http.Server
}

// NewProvider returns a Provider whose agents end with t.
func NewProvider(t testing.TB) *Provider {
	p := &Provider{Memory: providertest.NewMemory(providertest.MemoryOptions{}), t: t, agents: map[string]*served{}, tokens: map[string]string{}}
	t.Cleanup(p.closeAgents)
	return p
}

// closeAgents ends every agent and its connections.
func (p *Provider) closeAgents() {
	p.mu.Lock()
	agents := p.agents
	p.agents = map[string]*served{}
	p.mu.Unlock()
	for _, a := range agents {
		a.srv.Close()
		a.agent.Close()
	}
}

// Create implements sbx.Provider: the record, then its agent, serving.
func (p *Provider) Create(ctx context.Context, spec sbx.Spec) (sbx.Instance, error) {
	in, err := p.Memory.Create(ctx, spec)
	if err != nil {
		return in, err
	}
	// A restored sandbox's agent holds its snapshot's token (its source's
	// then), until serve gives it its own.
	token := spec.AccessToken
	p.mu.Lock()
	if spec.Snapshot != nil {
		token = p.tokens[spec.Snapshot.ID]
	}
	p.tokens[in.ProviderSandboxID] = token
	p.mu.Unlock()
	// Serve reaches this agent over loopback, as it reaches no real one: it
	// may rotate the token from there.
	env := testenv.AgentEnv(p.t)
	for k, v := range spec.Env { // as a real provider gives them to its agent
		env = append(env, k+"="+v)
	}
	a, err := agent.New(agent.Config{Token: token, Workdir: p.t.TempDir(), Env: env,
		Rotator: func(*http.Request) bool { return true }})
	if err != nil {
		return in, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		a.Close()
		return in, err
	}
	h := a.Handler()
	s := &served{agent: a, ln: ln, srv: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		f := p.inspect
		p.mu.Unlock()
		if f != nil {
			f(r)
		}
		if r.Method == http.MethodPost && r.URL.Path == "/token" {
			p.followToken(w, r, h, in.ProviderSandboxID)
			return
		}
		h.ServeHTTP(w, r)
	})}}
	go s.srv.Serve(ln)
	p.mu.Lock()
	p.agents[in.ProviderSandboxID] = s
	p.mu.Unlock()
	return in, nil
}

// AgentAddr implements sbx.AgentDialer.
func (p *Provider) AgentAddr(ctx context.Context, h sbx.Handle) (string, error) {
	s, err := p.served(h)
	if err != nil {
		return "", err
	}
	return s.ln.Addr().String(), nil
}

// PortAddr implements sbx.PortDialer: a sandbox's ports are this host's
// loopback ports, where its agent serves too.
func (p *Provider) PortAddr(ctx context.Context, h sbx.Handle, port int) (string, error) {
	if _, err := p.served(h); err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}

// Kill implements sbx.Provider: the record goes, and the agent takes no new
// connection; the ones it has stay open until the test ends.
func (p *Provider) Kill(ctx context.Context, h sbx.Handle) error {
	if s, err := p.served(h); err == nil {
		s.ln.Close()
	}
	return p.Memory.Kill(ctx, h)
}

// Watch implements sbx.Watcher: Crash reports to died until ctx ends.
func (p *Provider) Watch(ctx context.Context, died func(sbx.Died)) {
	p.mu.Lock()
	p.died = died
	p.mu.Unlock()
	<-ctx.Done()
	p.mu.Lock()
	p.died = nil
	p.mu.Unlock()
}

// Crash reports a sandbox's compute dead with diagnostic, as the local
// provider's watch reports an OOM kill; its agent stays as Kill leaves it.
func (p *Provider) Crash(providerID, diagnostic string) error {
	if err := p.Memory.Crash(providerID); err != nil {
		return err
	}
	p.mu.Lock()
	died := p.died
	p.mu.Unlock()
	if died == nil {
		p.t.Fatal("agenttest: Crash with no watcher running")
	}
	died(sbx.Died{ProviderSandboxID: providerID, Diagnostic: diagnostic})
	return nil
}

func (p *Provider) served(h sbx.Handle) (*served, error) {
	id, err := sbx.HandleID(h, func(string) bool { return true })
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.agents[id]
	if s == nil {
		return nil, sbx.Errorf(sbx.ENotFound, "no agent for sandbox %s", id)
	}
	return s, nil
}

// Stack is serve's API over a Provider, served on a loopback port.
type Stack struct {
	URL      string
	Key      string // the operator's key, of the verified, funded org "default"
	Provider *Provider
	Manager  *lifecycle.Manager
	Store    *ledger.Store
	Ledger   string // the SQLite file Store keeps
	Server   *httptest.Server
	// SSHAddr is where the SSH gateway in front of it listens, with this host key.
	SSHAddr    string
	SSHHostKey ssh.PublicKey
	errors     *lockedBuffer
}

// Option changes what Serve runs.
type Option func(*options)

type options struct{ noReaper bool }

// WithoutReaper leaves the reaper out, for a test whose ledger must change
// only by its own requests: the expiry of a sandbox one of them made would
// change it under the test.
func WithoutReaper() Option { return func(o *options) { o.noReaper = true } }

// Serve starts a Stack that ends with t, with the manager's watchers and
// reaper running.
func Serve(t testing.TB, opts ...Option) *Stack {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	path := filepath.Join(t.TempDir(), "ledger.db")
	store, err := ledger.Open(ctx, path, bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	clock, logger := sbx.SystemClock{}, slog.New(slog.DiscardHandler)
	prov := NewProvider(t)
	mgr := lifecycle.New(store, []sbx.Provider{prov}, lifecycle.Config{DefaultProvider: providertest.MemoryName}, clock, logger)
	var loops sync.WaitGroup
	loops.Go(func() { mgr.RunWatchers(ctx) })
	if !o.noReaper {
		loops.Go(func() { lifecycle.NewLoops(mgr, store).RunReaper(ctx) })
	}
	hostKey, err := sshgate.LoadHostKey(filepath.Join(t.TempDir(), sshgate.HostKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	gate := sshgate.New(mgr, store, sshgate.Config{HostKey: hostKey, Clock: clock, Log: logger})
	sshLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go gate.Serve(sshLn)
	sshPort := sshLn.Addr().(*net.TCPAddr).Port
	api := httpapi.New(mgr, store, httpapi.Config{PublicURL: "http://sbx.test", Domain: "sbx.localhost",
		SSH: httpapi.SSHEndpoint{Host: "127.0.0.1", Port: sshPort, KnownHosts: sshgate.KnownHostsLine("127.0.0.1", sshPort, hostKey.PublicKey())}}, clock, logger)
	errs := &lockedBuffer{}
	srv := httptest.NewUnstartedServer(api)
	srv.Config.ErrorLog = log.New(errs, "", 0)
	srv.Start()
	t.Cleanup(func() {
		// The agents first: a stream proxied to one (a watch that saw
		// nothing, a command's output) ends with its connection, so that
		// the server has no request left to wait for.
		gate.Close()
		prov.closeAgents()
		srv.CloseClientConnections()
		srv.Close()
		cancel()
		loops.Wait()
		mgr.Wait(context.Background())
		store.Close()
	})
	made, err := store.CreateOrgWith(ctx, ledger.NewOrg{Name: "default", KYCStatus: sbx.KYCVerified, Credits: 1_000_000_000_000,
		Key: sbx.APIKey{Name: "admin", Operator: true}}, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	return &Stack{URL: srv.URL, Key: made.Secret, Provider: prov, Manager: mgr, Store: store, Ledger: path, Server: srv, errors: errs,
		SSHAddr: sshLn.Addr().String(), SSHHostKey: hostKey.PublicKey()}
}

// ServerErrors is what serve's HTTP server logged: panics in handlers, among
// others.
func (s *Stack) ServerErrors() string { return s.errors.String() }

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Snapshot implements sbx.Snapshotter: the Memory provider's, and the token
// its agent started with, for a restore's agent.
func (p *Provider) Snapshot(ctx context.Context, h sbx.Handle, id string, memory bool) (sbx.SnapshotInfo, error) {
	info, err := p.Memory.Snapshot(ctx, h, id, memory)
	if err != nil {
		return info, err
	}
	src, _ := sbx.HandleID(h, func(string) bool { return true })
	p.mu.Lock()
	p.tokens[id] = p.tokens[src]
	p.mu.Unlock()
	return info, nil
}

// followToken serves a POST /token and, when the agent took the new token,
// records it for the snapshots taken from now on.
func (p *Provider) followToken(w http.ResponseWriter, r *http.Request, h http.Handler, id string) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	sw := &statusWriter{ResponseWriter: w}
	h.ServeHTTP(sw, r)
	var req apiv1.TokenRequest
	if sw.status == http.StatusNoContent && json.Unmarshal(body, &req) == nil {
		p.mu.Lock()
		p.tokens[id] = req.Token
		p.mu.Unlock()
	}
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

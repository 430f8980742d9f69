// Package agent is sbx's in-sandbox agent: the HTTP API of apiv1/agent.go
// (commands, PTYs, files, watches) that `sbx agent` serves as PID 1 inside
// every sandbox.
//
// An Agent is the API as an http.Handler; Run serves it and, as PID 1,
// reaps every orphan of the sandbox. Commands and PTYs belong to the agent,
// not to the requests that start or follow them: a client that goes away
// leaves them running, and any later request finds them by PID or tag and
// follows their output from what their buffer still holds.
package agent

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

// TokenEnv is a reserved environment variable name, once the way the agent
// got its token (now ReadToken); it is kept out of every command's
// environment all the same.
const TokenEnv = sbx.AccessTokenEnv

// minTokenLen is the shortest access token the agent accepts.
const minTokenLen = 32

// Config configures an Agent.
type Config struct {
	Token   string       // required: the access token every request but /health must carry in apiv1.AccessTokenHeader
	Workdir string       // default /workspace: default cwd, and base of relative paths
	User    string       // the user commands, PTYs and new files belong to unless a request names one; default the agent's own
	Start   string       // optional start command (run like a background command with tag "start")
	Env     []string     // default os.Environ(): the environment commands start from
	Log     *slog.Logger // default discard
	// Rotator, when set, says which peers may rotate the token; by default
	// any peer but the sandbox itself (fromHere). A test that serves the
	// agent on serve's own host sets it.
	Rotator func(r *http.Request) bool
}

// DefaultWorkdir is the working directory commands and relative paths start from.
const DefaultWorkdir = "/workspace"

// StartTag is the tag of the start command.
const StartTag = "start"

// Agent serves the agent API. Make one with New; Close ends what it started.
type Agent struct {
	workdir string
	user    string                   // the default user: Config.User
	rotator func(*http.Request) bool // who may rotate the token: Config.Rotator
	env     atomic.Pointer[[]string] // the base of every command's environment, less the token; replaced by a restored sandbox's own (POST /token)
	log     *slog.Logger
	token   atomic.Pointer[[sha256.Size]byte] // the access token's hash
	next    atomic.Pointer[[sha256.Size]byte] // a token also taken, which its first use makes the only one (POST /token's next)
	procs   *table
	reaper  *reaper
	code    contexts // code contexts (code.go)

	mu      sync.Mutex
	closed  bool
	watches map[io.Closer]struct{} // open watches, closed by Close
}

// New makes an agent and launches cfg.Start, if any. It creates the working
// directory when it is missing (and can).
func New(cfg Config) (*Agent, error) {
	if len(cfg.Token) < minTokenLen {
		return nil, errors.New("agent: the access token must be at least 32 characters")
	}
	if cfg.Workdir == "" {
		cfg.Workdir = DefaultWorkdir
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Env == nil {
		cfg.Env = os.Environ()
	}
	a := &Agent{workdir: cfg.Workdir, user: cfg.User, log: cfg.Log, procs: newTable(), reaper: processReaper(), watches: map[io.Closer]struct{}{},
		rotator: cfg.Rotator}
	if a.rotator == nil {
		a.rotator = func(r *http.Request) bool { return !a.fromHere(r) }
	}
	a.setToken(cfg.Token)
	a.env.Store(&cfg.Env)
	if _, err := a.lookupAccount(""); err != nil {
		a.log.Warn("the default user is not one of the sandbox's users: commands that name no user fail", "user", a.user, "err", err)
	}
	if err := os.MkdirAll(a.workdir, 0o755); err != nil {
		a.log.Warn("no working directory", "workdir", a.workdir, "err", err)
	}
	a.ownWorkdir()
	if cfg.Start != "" {
		c, err := a.startCommand(apiv1.StartCommandRequest{Cmd: cfg.Start, Tag: StartTag})
		if err != nil {
			return nil, fmt.Errorf("agent: start command: %w", err)
		}
		a.log.Info("start command running", "pid", c.pid, "cmd", cfg.Start)
	}
	return a, nil
}

// Handler is the whole agent API of apiv1/agent.go. Every route but
// GET /health needs the access token in apiv1.AccessTokenHeader.
func (a *Agent) Handler() http.Handler {
	mux := http.NewServeMux()
	// query: the query parameters a route takes; any other is a 400.
	route := func(pattern string, fn handler, query ...string) { mux.Handle(pattern, a.handle(fn, query)) }
	route("GET /health", a.health)
	route("GET /ready", a.health)
	route("POST /token", a.rotateToken)

	route("POST /commands", a.postCommand)
	route("GET /commands", a.listCommands)
	route("GET /commands/{ref}", a.getCommand)
	route("GET /commands/{ref}/stream", a.streamCommand)
	route("POST /commands/{ref}/stdin", a.writeStdin)
	route("DELETE /commands/{ref}/stdin", a.closeStdin)
	route("POST /commands/{ref}/signal", a.signalCommand)
	route("DELETE /commands/{ref}", a.killCommand)

	route("POST /pty", a.postPty)
	route("GET /pty/{ref}", a.attachPty)
	route("POST /pty/{ref}/resize", a.resizePty)

	route("GET /files", a.readFile, "path")
	route("PUT /files", a.writeFile, "path", "mode", "user")
	route("POST /files", a.uploadFiles, "path", "user")
	route("DELETE /files", a.removeFile, "path")
	route("GET /files/list", a.listFiles, "path", "depth")
	route("GET /files/stat", a.statFile, "path")
	route("POST /files/mkdir", a.makeDir, "user")
	route("POST /files/move", a.moveFile)
	route("GET /files/watch", a.watchFiles, "path", "recursive")

	route("POST /code/contexts", a.postCodeContext)
	route("GET /code/contexts", a.listCodeContexts)
	route("DELETE /code/contexts/{ctx}", a.deleteCodeContext)
	route("POST /code/contexts/{ctx}/restart", a.restartCodeContext)
	route("POST /code/contexts/{ctx}/interrupt", a.interruptCodeContext)
	route("POST /code/execute", a.executeCode)
	a.e2bCodeRoutes(mux)
	a.envdRoutes(mux)
	a.execdRoutes(mux)
	return a.authenticate(routed(mux))
}

// Close kills every command and PTY (their whole process groups), waits
// for them to end and stops the watches. New commands are refused after.
func (a *Agent) Close() error {
	a.mu.Lock()
	a.closed = true
	watches := a.watches
	a.watches = map[io.Closer]struct{}{}
	a.mu.Unlock()
	for w := range watches {
		w.Close()
	}
	a.closeCode()
	cmds := a.procs.close()
	for _, c := range cmds {
		c.out.abandon()
		c.kill("the agent closed")
	}
	for _, c := range cmds {
		<-c.done
	}
	return nil
}

// authenticate lets through requests that carry the access token, and
// the health checks (/health, envd's envdHealth) without one.
func (a *Agent) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" || r.URL.Path == envdHealth || a.tokenMatches(r.Header.Get(apiv1.AccessTokenHeader)) {
			next.ServeHTTP(w, r)
			return
		}
		e := apiError(http.StatusUnauthorized, "a missing or wrong access token in %s", apiv1.AccessTokenHeader)
		writeJSON(w, e.Code, e)
	})
}

// health answers /health and /ready alike: the agent serves once New has
// launched the start command, so ready is as soon as it answers.
func (a *Agent) health(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, apiv1.HealthStatus{Status: "ok", Version: version()})
	return nil
}

// version is the sbx version this binary was built from.
var version = sync.OnceValue(func() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
})

package agentbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/strictjson"
)

// Bridge serves sbx's agent API for one sandbox over its Remote. Only
// serve reaches it, and serve has checked the caller, so it checks no
// access token; POST /token is accepted, as it changes nothing the daemon
// knows (a new environment is a 501). The code API and SFTP are 501s: no
// sbx agent runs in the sandbox.
type Bridge struct {
	name   string // the provider's, in messages
	remote Remote
	ctx    context.Context // ends with Close: the processes it follows are let go
	stop   context.CancelFunc
	mux    *http.ServeMux

	mu        sync.Mutex
	procs     map[int]*proc // what the bridge started, running or recently ended
	endedPIDs []int         // of ended processes, oldest first
}

// maxEnded is how many ended processes the bridge remembers.
const maxEnded = 64

// New returns the bridge of a sandbox of provider name over r.
func New(name string, r Remote) *Bridge {
	b := &Bridge{name: name, remote: r, mux: http.NewServeMux(), procs: map[int]*proc{}}
	b.ctx, b.stop = context.WithCancel(context.Background())
	for pattern, fn := range map[string]handler{
		"GET /health": b.health,
		"GET /ready":  b.ready,
		"POST /token": b.token,
		"/code/":      b.noCode,

		"POST /commands":               b.postCommand,
		"GET /commands":                b.listCommands,
		"GET /commands/{ref}":          b.getCommand,
		"GET /commands/{ref}/stream":   b.streamCommand,
		"POST /commands/{ref}/stdin":   b.writeStdin,
		"DELETE /commands/{ref}/stdin": b.closeStdin,
		"POST /commands/{ref}/signal":  b.signalCommand,
		"DELETE /commands/{ref}":       b.killCommand,
		"POST /pty":                    b.postPty,
		"GET /pty/{ref}":               b.attachPty,
		"POST /pty/{ref}/resize":       b.resizePty,
		"GET /files":                   b.readFile,
		"PUT /files":                   b.writeFile,
		"POST /files":                  b.uploadFiles,
		"DELETE /files":                b.removeFile,
		"GET /files/list":              b.listFiles,
		"GET /files/stat":              b.statFile,
		"POST /files/mkdir":            b.makeDir,
		"POST /files/move":             b.moveFile,
		"GET /files/watch":             b.watchFiles,
	} {
		b.mux.Handle(pattern, fn)
	}
	return b
}

func (b *Bridge) ServeHTTP(w http.ResponseWriter, r *http.Request) { b.mux.ServeHTTP(w, r) }

// Close lets go of the processes the bridge follows; they go on in the sandbox.
func (b *Bridge) Close() { b.stop() }

// handler writes a handler's error in the agent's envelope.
type handler func(http.ResponseWriter, *http.Request) error

func (fn handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := fn(w, r); err != nil {
		writeError(w, err)
	}
}

// Errorf is an answer of the agent's API with a status and a detail, for
// a Remote's refusals.
func Errorf(status int, format string, args ...any) *apiv1.Error {
	return &apiv1.Error{Code: status, Type: apiv1.ErrorType(status), Detail: fmt.Sprintf(format, args...), Errors: []apiv1.FieldError{}}
}

func writeError(w http.ResponseWriter, err error) {
	var ae *apiv1.Error
	if !errors.As(err, &ae) {
		ae = Errorf(http.StatusBadGateway, "%v", err)
	}
	writeJSON(w, ae.Code, ae)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func flush(w http.ResponseWriter) { http.NewResponseController(w).Flush() }

// decodeJSON reads a JSON body of at most 1 MiB into v as the agent does
// (internal/strictjson): exact field names, no unknown fields, no null, no
// trailing data; each problem a 400 naming its field.
func decodeJSON(r *http.Request, v any) error {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return Errorf(http.StatusUnsupportedMediaType, "the body must be application/json")
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20+1))
	if err != nil {
		return Errorf(http.StatusBadRequest, "reading the body: %v", err)
	}
	if len(data) > 1<<20 {
		return Errorf(http.StatusRequestEntityTooLarge, "the body is larger than 1 MiB")
	}
	if err := strictjson.Decode(data, v); err != nil {
		e := Errorf(http.StatusBadRequest, "%v", err)
		if se, ok := errors.AsType[*strictjson.Error](err); ok {
			for _, p := range se.Problems {
				if p.Field != "" {
					e.Errors = append(e.Errors, apiv1.FieldError{Field: p.Field, Message: p.Message})
				}
			}
		}
		return e
	}
	return nil
}

func (b *Bridge) health(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, apiv1.HealthStatus{Status: "ok", Version: b.name + "-bridge"})
	return nil
}

// ready answers once the daemon does.
func (b *Bridge) ready(w http.ResponseWriter, r *http.Request) error {
	if err := b.remote.Ready(r.Context()); err != nil {
		return err
	}
	return b.health(w, r)
}

func (b *Bridge) token(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.TokenRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if len(req.Env) > 0 || len(req.Unset) > 0 {
		return Errorf(http.StatusNotImplemented, "provider %s cannot change the environment of a running sandbox", b.name)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (b *Bridge) noCode(w http.ResponseWriter, r *http.Request) error {
	return Errorf(http.StatusNotImplemented, "provider %s does not serve sbx's code API: its sandboxes run no sbx agent", b.name)
}

package apiv1

import "time"

// The agent's API. `sbx agent` serves it inside every sandbox, as PID 1, on
// AgentPort. serve proxies it unchanged under /api/v1/sandboxes/{id}/
// (authenticated by API key; serve adds the token) and at the sandbox's
// runtime URL (authenticated by the sandbox's access token, sent as
// AccessTokenHeader). Routes, relative to either:
//
//	GET    /health                    200 HealthStatus; no token needed
//	GET    /ready                     200 HealthStatus once the agent serves and its start command runs
//	POST   /token                     TokenRequest: replaces the access token (serve rotates it on connect)
//
//	POST   /commands                  StartCommandRequest; streams CommandEvents (NDJSON) until the
//	                                  command ends, or, with background, 201 CommandInfo at once
//	GET    /commands                  CommandList: running commands and PTYs, and recently ended ones
//	GET    /commands/{ref}            CommandInfo; ref is a PID or a tag
//	GET    /commands/{ref}/stream     the output so far, then live, then the end (NDJSON CommandEvents)
//	POST   /commands/{ref}/stdin      the body's bytes to its stdin (or to its terminal)
//	DELETE /commands/{ref}/stdin      closes its stdin
//	POST   /commands/{ref}/signal     SignalRequest → 200 CommandInfo
//	DELETE /commands/{ref}            SIGKILL to its whole process group → 200 CommandInfo
//
//	POST   /pty                       StartPtyRequest → 201 CommandInfo (a PTY is a command with Pty set)
//	GET    /pty/{ref}                 WebSocket: binary messages carry output (from the start of what is
//	                                  buffered) to the client and input to the terminal; text messages
//	                                  carry PtyControl both ways (resize in; exit out). A client that
//	                                  offers the subprotocol PtyProtocol is answered with it
//	POST   /pty/{ref}/resize          PtySize
//
//	GET    /files?path=P              the file's bytes, streamed (application/octet-stream)
//	PUT    /files?path=P[&mode=755][&user=U]  writes the body to P, streamed, making parents → 200 EntryInfo;
//	                                  mode (octal) sets its permissions (default 644, or a replaced file's)
//	POST   /files?path=DIR[&user=U]   multipart/form-data: each part written to DIR/<its filename> → EntryList
//	DELETE /files?path=P              removes P, recursively → 204
//	GET    /files/list?path=P&depth=N EntryList: P's entries to depth N (default 1), sorted by path
//	GET    /files/stat?path=P         EntryInfo
//	POST   /files/mkdir[?user=U]      PathRequest → 201 EntryInfo (parents made; an existing directory is 200)
//	POST   /files/move                MoveRequest → 200 EntryInfo of the destination
//	GET    /files/watch?path=P&recursive=B   streams FileEvents (NDJSON) until the client leaves
//
// Commands, PTYs and the files and directories the agent makes belong to
// the request's user (a user name or UID, NAME[:GROUP]), by default the
// sandbox's default user: its template's (user, UID 1000, in base and
// code-interpreter), else root. A replaced file keeps its owner. POST
// /token is refused (403) from the sandbox's own addresses: only serve
// rotates the token.
//
// Paths are absolute inside the sandbox; a relative one is relative to
// /workspace. Errors use the Error envelope, with the path (its first 64
// bytes) and the reason in Detail: 404 not found, 400 is a directory / not a
// directory / not a regular file / name too long / symlink loop / bad input,
// 403 permission denied, 409 exists, 507 no space left, 401 a missing or
// wrong token. JSON bodies need Content-Type: application/json (415) and are
// decoded strictly (exact field names; unknown fields, null and trailing data
// are 400s naming the field); a query parameter a route does not list above,
// or an empty or malformed value, is a 400; a wrong method is a 405 with
// Allow. A command whose program is not found exits 127, one that cannot be
// executed 126, as under a shell. The tags "." and ".." are refused.

// SFTPServer is a program name the agent runs itself for: a command whose
// args are just [SFTPServer] serves SFTP (github.com/pkg/sftp) on its stdin
// and stdout, as the command's user in its working directory, until its
// stdin ends. It is what the SSH gateway's sftp subsystem runs.
const SFTPServer = "sbx-sftp-server"

// AgentPort is the fixed port of the agent inside every sandbox.
const AgentPort = 49983

// AccessTokenHeader carries a sandbox's access token to its agent.
const AccessTokenHeader = "X-Access-Token"

// NDJSON is the media type of the agent's event streams: one JSON object per line.
const NDJSON = "application/x-ndjson"

// HealthStatus is the body of GET /health and GET /ready.
type HealthStatus struct {
	Status  string `json:"status" enum:"ok,starting"`
	Version string `json:"version"` // the sbx version of the agent
}

// TokenRequest is the body of POST /token.
type TokenRequest struct {
	Token string `json:"token" doc:"The new access token, at least 32 characters."`
	// A sandbox restored from another's snapshot holds its source's
	// environment in its agent's memory: serve gives it its own.
	Env   map[string]string `json:"env,omitempty" doc:"Variables commands start with from now on, added to or replacing the sandbox's (a sandbox restored from a snapshot: its own)."`
	Unset []string          `json:"unset,omitempty" doc:"Variables commands no longer start with (a restored sandbox: its source's)."`
	// A warm pool's member is offered the token its checkout will give
	// it, so that the checkout needs no call to the agent.
	Next string `json:"next,omitempty" doc:"A token also taken from now on, at least 32 characters; its first use makes it the only one."`
}

// StartCommandRequest is the body of POST /commands.
type StartCommandRequest struct {
	Cmd        string            `json:"cmd,omitempty" doc:"A command line, run by /bin/bash -l -c (/bin/sh -c without bash). Exactly one of cmd and args."`
	Args       []string          `json:"args,omitempty" doc:"An argv, run directly, found on PATH. Just [\"sbx-sftp-server\"] runs the agent's own SFTP server on the command's stdin and stdout."`
	Env        map[string]string `json:"env,omitempty" doc:"Added to the sandbox's environment."`
	Cwd        string            `json:"cwd,omitempty" doc:"Default /workspace."`
	User       string            `json:"user,omitempty" doc:"A user name or UID (NAME[:GROUP] or UID[:GID]); default the template's default user (user, UID 1000, in base and code-interpreter), else root."`
	Tag        string            `json:"tag,omitempty" pattern:"^([A-Za-z0-9_-][A-Za-z0-9._-]{0,63}|\\.[A-Za-z0-9_-][A-Za-z0-9._-]{0,62}|\\.\\.[A-Za-z0-9._-]{1,62})$" doc:"A name to find the command by; unique among running commands. 1 to 64 letters, digits, '.', '_' and '-', but not . or .. (a path segment)."`
	Timeout    int64             `json:"timeout,omitempty" minimum:"0" doc:"Seconds after which the command's process group is killed; 0: none."`
	Stdin      bool              `json:"stdin,omitempty" doc:"Keep stdin open for POST …/stdin; default: stdin is empty."`
	Background bool              `json:"background,omitempty" doc:"Answer 201 with the command at once instead of streaming its output."`
}

// CommandEvent is one line of a command's stream. A stream whose sandbox
// stops running (deleted, paused, timed out, failed: out of memory, …)
// before the command ends ends with an event of type error from serve, its
// Error saying why.
type CommandEvent struct {
	Type     string `json:"type" enum:"start,stdout,stderr,end,error"`
	PID      int    `json:"pid,omitempty"`      // on start
	Tag      string `json:"tag,omitempty"`      // on start
	Data     []byte `json:"data,omitempty"`     // stdout, stderr: the bytes, base64 in JSON
	ExitCode *int   `json:"exitCode,omitempty"` // on end: the exit status, -1 when killed by a signal
	Signal   string `json:"signal,omitempty"`   // on end: the signal that killed it, e.g. KILL
	Error    string `json:"error,omitempty"`    // on end: why it ended other than by exiting, e.g. a timeout; on error: why the stream ended
}

// CommandInfo describes a command or a PTY.
type CommandInfo struct {
	PID       int        `json:"pid"`
	Tag       string     `json:"tag,omitempty"`
	Cmd       string     `json:"cmd,omitempty"`
	Args      []string   `json:"args,omitempty"`
	Cwd       string     `json:"cwd"`
	User      string     `json:"user"`
	Pty       bool       `json:"pty,omitempty"`
	Running   bool       `json:"running"`
	ExitCode  *int       `json:"exitCode,omitempty"`
	Signal    string     `json:"signal,omitempty"`
	StartedAt time.Time  `json:"startedAt"`
	EndedAt   *time.Time `json:"endedAt,omitempty"`
}

// CommandList is the body of GET /commands.
type CommandList struct {
	Items []CommandInfo `json:"items"`
}

// SignalRequest is the body of POST /commands/{ref}/signal.
type SignalRequest struct {
	Signal string `json:"signal" doc:"A signal name without SIG (TERM, INT, HUP, KILL, USR1, …) or number."`
}

// StartPtyRequest is the body of POST /pty.
type StartPtyRequest struct {
	Cols uint16            `json:"cols" minimum:"1" maximum:"1000"`
	Rows uint16            `json:"rows" minimum:"1" maximum:"1000"`
	Cmd  string            `json:"cmd,omitempty" doc:"Default: a login shell (bash -l, else sh -l)."`
	Env  map[string]string `json:"env,omitempty"`
	Cwd  string            `json:"cwd,omitempty" doc:"Default /workspace."`
	User string            `json:"user,omitempty" doc:"A user name or UID (NAME[:GROUP] or UID[:GID]); default the template's default user (user, UID 1000, in base and code-interpreter), else root."`
	Tag  string            `json:"tag,omitempty" pattern:"^([A-Za-z0-9_-][A-Za-z0-9._-]{0,63}|\\.[A-Za-z0-9_-][A-Za-z0-9._-]{0,62}|\\.\\.[A-Za-z0-9._-]{1,62})$" doc:"As a command's tag: not . or .."`
}

// PtySize is the body of POST /pty/{ref}/resize.
type PtySize struct {
	Cols uint16 `json:"cols" minimum:"1" maximum:"1000"`
	Rows uint16 `json:"rows" minimum:"1" maximum:"1000"`
}

// PtyProtocol is the WebSocket subprotocol of a PTY's WebSocket. A browser
// offers it beside KeyProtocolPrefix+<API key>, which serve takes off the
// request, since a browser's WebSocket cannot carry an Authorization header
// and offering a subprotocol obliges the server to choose one.
const PtyProtocol = "sbx.pty"

// KeyProtocolPrefix, followed by an API key, is a WebSocket subprotocol
// that serve accepts as the key when the request carries none in its
// headers (browsers cannot set them on a WebSocket). serve removes it from
// the request before anything else sees it; the agent never does.
const KeyProtocolPrefix = "sbx.key."

// PtyControl is a text message on a PTY's WebSocket: "resize" from the
// client, with Cols and Rows; "exit" from the agent, with ExitCode.
type PtyControl struct {
	Type     string `json:"type" enum:"resize,exit"`
	Cols     uint16 `json:"cols,omitempty"`
	Rows     uint16 `json:"rows,omitempty"`
	ExitCode *int   `json:"exitCode,omitempty"`
	Signal   string `json:"signal,omitempty"`
}

// EntryInfo describes a file, directory or symlink in the sandbox.
type EntryInfo struct {
	Name    string    `json:"name"`
	Path    string    `json:"path"`
	Type    string    `json:"type" enum:"file,dir,symlink,other"`
	Size    int64     `json:"size"`
	Mode    string    `json:"mode" doc:"Permissions in octal, e.g. 0644."`
	ModTime time.Time `json:"modTime"`
	Target  string    `json:"target,omitempty"` // a symlink's target
}

// EntryList is the body of GET /files/list and of a multipart upload.
type EntryList struct {
	Items []EntryInfo `json:"items"`
}

// PathRequest is the body of POST /files/mkdir.
type PathRequest struct {
	Path string `json:"path"`
}

// MoveRequest is the body of POST /files/move.
type MoveRequest struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// FileEvent is one line of a watch stream. A watch whose sandbox stops
// running ends with an event of type error from serve, its Error saying why.
type FileEvent struct {
	Type  string    `json:"type" enum:"create,write,remove,rename,chmod,error"`
	Path  string    `json:"path"`
	At    time.Time `json:"at"`
	Error string    `json:"error,omitempty"`
}

// AgentStats is what `sbx agent stats`, run in a sandbox, prints: the
// sandbox's CPU seconds and memory as its cgroup counts them, and its
// processes.
type AgentStats struct {
	CPUSeconds  float64 `json:"cpuSeconds"`
	MemoryBytes int64   `json:"memoryBytes"`
	Processes   int64   `json:"processes"`
}

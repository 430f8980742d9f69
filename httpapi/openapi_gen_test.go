package httpapi_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sbxdev/sbx/apiv1"
)

// The OpenAPI document is generated from the operations below and the types
// of package apiv1 (their json, enum and doc tags), and committed as
// openapi.json. TestOpenAPIDocumentIsCurrent fails when the file differs from
// what this generator makes; `go test ./httpapi -run OpenAPI -update` rewrites it.

var update = flag.Bool("update", false, "rewrite openapi.json from the generator")

// op describes one operation of the API.
type op struct {
	id, summary, description string
	query                    []param
	headers                  []param
	body                     any    // a value of the request body's type; nil: no body
	bodyType                 string // its media type; default application/json
	bodyRequired             bool
	status                   int         // the success status
	response                 any         // a value of the success body's type; nil: none
	responseType             string      // its media type; default application/json
	also                     map[int]any // other success statuses, with JSON bodies
	errors                   []int
	// rpcErrors are error statuses whose body is the envelope or a
	// JSON-RPC error response (the MCP endpoint's), so any JSON object.
	rpcErrors []int
	open      bool // no API key needed
}

type param struct {
	name, description string
	schema            map[string]any
	repeat            bool
}

var (
	str        = map[string]any{"type": "string"}
	limitParam = param{"limit", "Page size, 1 to 1000 (default 100).", map[string]any{"type": "integer", "minimum": 1, "maximum": 1000}, false}
	cursor     = param{"cursor", "The next_cursor of the previous page.", str, false}
	volumePath = param{"path", "A path in the volume, from its root (default /).", str, false}
	idemKey    = param{"Idempotency-Key", "A key of the client's (1 to 255 printable characters, such as a UUID) that makes a retry safe: the same key with an equal request within 24 hours, through the same API key, answers what the first request made instead of making more; the same key with another request is a 422.", map[string]any{"type": "string", "minLength": 1, "maxLength": 255}, false}
	states     = param{"state", "Only sandboxes in these states; repeat the parameter or separate states with commas.", str, true}
	actionErrs = []int{400, 401, 404, 409, 502, 503, 504} // 504: the sandbox stayed busy while the caller waited
	ledgerErrs = []int{400, 401, 404, 409}                // changes only the ledger
	readErrs   = []int{400, 401, 404}                     // 400: an unknown query parameter
	// templateReadErrs: a provider that keeps no templates answers 501.
	templateReadErrs = []int{400, 401, 404, 501, 503}
	planErrs         = []int{403}                     // 403: a plan limit (plan_limit_exceeded)
	adminErrs        = []int{400, 401, 403, 404}      // 403: not the operator's key
	roleErrs         = []int{400, 401, 403, 404, 409} // 403: the key's role may not
)

const createDescription = `Creates a sandbox from a template on the server's default provider.
Without waitReady the answer comes at once with state "starting"; with it, once
the sandbox runs (or 502 when it failed to start, 504 when it was not ready in
time). The body is strict: an unknown field is a 400 naming it, and the stale
fields timeoutMs, autoResume, secure, allow_internet_access, network, mcp,
volume_mounts and volumeMounts are rejected with a 400 saying they are not
supported. Env var values are passed to the sandbox and never stored or returned.
With an Idempotency-Key header, a retry of the same request answers 200 with
the sandbox the first made.`

const egressDescription = `The body is the whole new policy: mode internet (every public IPv4
address, less deny), none (nothing, not even DNS) or allow (only allow, less deny). Entries are
IPv4 addresses, CIDR prefixes or domain names, which the host resolves and follows (looked up
again every 30 seconds). A policy never reaches the host, other sandboxes, private, link-local,
loopback or reserved addresses: an allow entry within them is a 400. The provider applies it at
once, to a paused or hibernated sandbox too (connections it no longer allows stop passing), and
the sandbox's timeline records egress_set. A mode the server's operator does not allow is a 403;
a provider that enforces no policy answers 501.`

const mcpDescription = `A JSON-RPC message of the Model Context Protocol (streamable HTTP transport,
stateless: no Mcp-Session-Id; GET and DELETE are 405s). The Accept header must name both
application/json and text/event-stream, as MCP clients send; answers are application/json: 200 with
the JSON-RPC response to a request, 202 with no body for a notification. The tools (create, list,
get, pause, resume and delete sandboxes; run a command or code; read, write and list files; a preview
URL; snapshot and fork) call this API with the request's key, so each is authorized as the key's
other requests are; what the API refuses is a tool result with isError and the API's detail.`

var operations = map[string]op{
	"GET /healthz":             {id: "health", summary: "Liveness of the server", status: 200, response: map[string]string{}, open: true},
	"GET /api/v1/openapi.json": {id: "openapi", summary: "This document", status: 200, response: json.RawMessage{}, open: true},
	"GET /api/v1/me":           {id: "me", summary: "The caller's org, workspace, project and key scope", status: 200, response: apiv1.Me{}, errors: []int{400, 401}},
	"POST /api/v1/mcp": {id: "mcp", summary: "The Model Context Protocol (streamable HTTP): sbx's tools for AI agents, as the key's caller",
		description: mcpDescription, body: json.RawMessage{}, bodyRequired: true, status: 200, response: json.RawMessage{},
		also: map[int]any{202: nil}, errors: []int{401, 500}, rpcErrors: []int{400, 404}},
	"GET /api/v1/observability/summary": {id: "observabilitySummary", summary: "Usage per project, quota checks, provider and endpoint availability, next actions",
		status: 200, response: apiv1.Summary{}, errors: []int{400, 401}},

	"GET /api/v1/events": {id: "listEvents", summary: "The org's events after an ID, oldest first: every state change and timeline step of its sandboxes, runtimes, snapshots and template builds, and its credit events",
		description: eventsDescription, query: eventParams, status: 200, response: apiv1.EventList{}, errors: readErrs},
	"GET /api/v1/events/stream": {id: "followEvents", summary: "Follow the org's events as server-sent events: those after an ID, then each new one as it commits",
		description: "Each event is sent as `id: ID`, `event: TYPE`, `data: JSON` (an OrgEvent). A client that reconnects with the Last-Event-ID header (as an EventSource does) resumes after that ID; else after the after parameter (0: from the oldest kept). Filters and scope as GET /api/v1/events.",
		query:       eventParams, headers: []param{{"Last-Event-ID", "Resume after this event ID (it wins over after).", str, false}},
		status: 200, response: apiv1.OrgEvent{}, responseType: "text/event-stream", errors: readErrs},

	"POST /api/v1/sandboxes": {id: "createSandbox", summary: "Create a sandbox", description: createDescription,
		headers: []param{idemKey}, body: apiv1.CreateSandboxRequest{}, bodyRequired: true, status: 201, response: apiv1.Sandbox{},
		also: map[int]any{200: apiv1.Sandbox{}}, errors: []int{400, 401, 402, 403, 404, 409, 422, 501, 502, 503, 504, 507}},
	"GET /api/v1/sandboxes": {id: "listSandboxes", summary: "List the caller's sandboxes, newest first",
		query: []param{states, {"template", "Only sandboxes of this template.", str, false},
			{"metadata", "Only sandboxes whose metadata has key=value; repeat for several pairs.", str, true}, limitParam, cursor},
		status: 200, response: apiv1.SandboxList{}, errors: []int{400, 401}},
	"GET /api/v1/sandboxes/{id}": {id: "getSandbox", summary: "A sandbox: state, runtime URL and token while running, timestamps, timeline, diagnostic, credits",
		status: 200, response: apiv1.Sandbox{}, errors: []int{400, 401, 404}},
	"DELETE /api/v1/sandboxes/{id}": {id: "deleteSandbox", summary: "Kill a sandbox; its row stays for audit and billing",
		status: 200, response: apiv1.Sandbox{}, errors: actionErrs},
	"POST /api/v1/sandboxes/{id}/connect": {id: "connectSandbox", summary: "Runtime URL and token (rotated when asked); resumes a paused sandbox and extends the timeout",
		body: apiv1.ConnectRequest{}, status: 200, response: apiv1.Sandbox{}, errors: append(append([]int{402, 507}, planErrs...), actionErrs...)},
	"POST /api/v1/sandboxes/{id}/pause": {id: "pauseSandbox", summary: "Pause a running sandbox (pause_reason user): frozen in memory, or hibernated to disk",
		body: apiv1.PauseRequest{}, status: 200, response: apiv1.Sandbox{}, errors: append([]int{501}, actionErrs...)},
	"POST /api/v1/sandboxes/{id}/resume": {id: "resumeSandbox", summary: "Resume a paused sandbox, optionally with a new timeout",
		body: apiv1.TimeoutRequest{}, status: 200, response: apiv1.Sandbox{}, errors: append(append([]int{402, 507}, planErrs...), actionErrs...)},
	"POST /api/v1/sandboxes/{id}/refreshes": {id: "refreshSandbox", summary: "Keep a running sandbox alive for at least duration more seconds (never shortens)",
		body: apiv1.RefreshRequest{}, status: 200, response: apiv1.Sandbox{}, errors: append(planErrs, ledgerErrs...)},
	"POST /api/v1/sandboxes/{id}/timeout": {id: "setSandboxTimeout", summary: "Expire timeout seconds from now (from the next resume when paused)",
		body: apiv1.TimeoutRequest{}, bodyRequired: true, status: 200, response: apiv1.Sandbox{}, errors: append(planErrs, ledgerErrs...)},
	"PUT /api/v1/sandboxes/{id}/egress": {id: "setSandboxEgress", summary: "Replace a running or paused sandbox's egress policy, at once",
		description: egressDescription, body: apiv1.Egress{}, bodyRequired: true, status: 200, response: apiv1.Sandbox{},
		errors: []int{400, 401, 403, 404, 409, 501, 502, 503, 504}},
	"GET /api/v1/sandboxes/{id}/logs": {id: "sandboxLogs", summary: "A page of the sandbox's log, oldest first: lifecycle lines and the provider's own",
		query: []param{limitParam, cursor}, status: 200, response: apiv1.LogPage{}, errors: []int{400, 401, 404}},
	"GET /api/v1/sandboxes/{id}/logs/stream": {id: "followSandboxLogs", summary: "Follow the sandbox's log: every line so far, then each new line as it comes",
		description: "The whole log as the logs operation orders it, then each line added to it (lifecycle lines, the provider's own, the sandbox's output) within a fraction of a second. " +
			"The stream is NDJSON: one LogLine per line, flushed as it comes. It ends when the sandbox ends (killed or failed), after the lines it ended with, or when the client goes; " +
			"a paused sandbox's stream goes on.",
		status: 200, response: apiv1.LogLine{}, responseType: apiv1.NDJSON, errors: []int{400, 401, 404}},
	"GET /api/v1/sandboxes/{id}/metrics": {id: "sandboxMetrics", summary: "CPU, memory, processes, network and disk of a running sandbox",
		status: 200, response: apiv1.Metrics{}, errors: []int{400, 401, 404, 409, 501, 502, 503}},
	"POST /api/v1/sandboxes/{id}/previews": {id: "createPreviewLink", summary: "Make a link to one port of the sandbox that works without other credentials until it expires or is revoked",
		description: "A sandbox's ports are reached at its preview URLs, {port}-{sandboxID}.{domain} (previewURL in the sandbox) and /api/v1/sandboxes/{id}/ports/{port}/…, " +
			"HTTP/1.1 and WebSocket, ports 22 and 49983 never. A private preview (the default) takes the sandbox's trafficToken (header X-Sbx-Traffic-Token, or ?sbx_token= once: " +
			"it is kept in an HTTP-only cookie for that preview and taken out of the URL by a redirect), an API key that reaches the sandbox (X-API-Key), or the token of a link made here. " +
			"Preview traffic wakes a paused sandbox unless its preview says wake: false (then 409 with Retry-After). No process on the port is a 502; an ended sandbox a 404. " +
			"The link's url, with its token, is answered only here.",
		body: apiv1.CreatePreviewLinkRequest{}, bodyRequired: true, status: 201, response: apiv1.PreviewLink{}, errors: []int{400, 401, 403, 404, 409, 413, 415}},
	"GET /api/v1/sandboxes/{id}/previews": {id: "listPreviewLinks", summary: "The sandbox's preview links, newest first (without their tokens)",
		status: 200, response: apiv1.PreviewLinkList{}, errors: readErrs},
	"DELETE /api/v1/sandboxes/{id}/previews/{link_id}": {id: "revokePreviewLink", summary: "Revoke a preview link: it stops working at once",
		status: 200, response: apiv1.PreviewLink{}, errors: readErrs},

	"GET /api/v1/sandboxes/{id}/desktop": {id: "desktopViewer", summary: "A noVNC viewer of the sandbox's desktop (a desktop template's VNC server on port 5900), as an HTML page",
		description: "Opened with a preview's credentials (the sandbox's trafficToken as ?sbx_token=, an API key, or a preview link's token), as port 5900's preview would be; a paused sandbox wakes as for a preview. " +
			"The page loads noVNC from this server alone (serve --novnc-dir) and connects to …/desktop/websockify. View only unless view_only=false; the server enforces it, not the page.",
		query:  []param{{apiv1.TrafficTokenParam, "The sandbox's traffic token (or a preview link's).", str, false}, {"view_only", "false: the viewer's keys and pointer reach the desktop (default true).", map[string]any{"type": "boolean"}, false}},
		status: 200, response: binary{}, responseType: "text/html", errors: []int{400, 401, 403, 404, 409, 503}},
	"GET /api/v1/sandboxes/{id}/desktop/websockify": {id: "desktopSocket", summary: "A WebSocket to the sandbox's VNC server (binary messages, RFB), as noVNC speaks it",
		description: "Credentials and view_only as the viewer's. In view-only mode serve drops the client's key, pointer and clipboard messages.",
		query:       []param{{apiv1.TrafficTokenParam, "The sandbox's traffic token (or a preview link's).", str, false}, {"view_only", "false: pass the client's input on (default true).", map[string]any{"type": "boolean"}, false}},
		status:      101, errors: []int{400, 401, 403, 404, 409, 502}},
	"GET /api/v1/sandboxes/{id}/desktop/screenshot": {id: "desktopScreenshot", summary: "A PNG of the sandbox's desktop, for agents that drive it",
		status: 200, response: binary{}, responseType: "image/png", errors: []int{400, 401, 404, 409, 502, 503}},
	"POST /api/v1/sandboxes/{id}/snapshots": {id: "createSnapshot", summary: "Capture a running or paused sandbox as a snapshot; it goes on as it was",
		description: "A snapshot holds the sandbox's memory, processes and writable layer: the sandbox stands still only while its memory is written (pausedMs), its connections kept, then goes on as it was (a paused one stays paused). " +
			"The answer comes once the snapshot is ready. A snapshot belongs to the sandbox's project, outlives it, and starts any number of sandboxes (create with snapshotID); its storage is billed per GiB held (snapshot_storage). " +
			"501 where the provider cannot snapshot (runc, or a sandbox with GPUs).",
		body: apiv1.CreateSnapshotRequest{}, status: 201, response: apiv1.Snapshot{}, errors: []int{400, 401, 402, 404, 409, 413, 415, 501, 502, 503}},
	"POST /api/v1/sandboxes/{id}/fork": {id: "forkSandbox", summary: "Make count running children of a running sandbox, each with its memory, processes and files",
		description: "The parent is captured once and each child restored from the capture at once; the parent goes on. Each child is a sandbox of its own (ID, address, access token), in the parent's project, with its timeout, env, egress policy and ports, " +
			"its metadata the parent's and sbx.forkOf. The answer lists the children made (running) and the errors of the others, none of which is left half-made; 502 when none could be made.",
		body: apiv1.ForkRequest{}, status: 201, response: apiv1.ForkResult{}, errors: []int{400, 401, 402, 404, 409, 413, 415, 501, 502, 503}},
	"GET /api/v1/snapshots": {id: "listSnapshots", summary: "The snapshots the key reaches, newest first",
		query: []param{limitParam, cursor, {"sandboxID", "Only those of this source sandbox (its sbx UUID).", str, false}}, status: 200, response: apiv1.SnapshotList{}, errors: []int{400, 401}},
	"GET /api/v1/snapshots/{snapshot_id}": {id: "getSnapshot", summary: "A snapshot", status: 200, response: apiv1.Snapshot{}, errors: readErrs},
	"DELETE /api/v1/snapshots/{snapshot_id}": {id: "deleteSnapshot", summary: "Delete a snapshot: its storage is freed and no longer billed; sandboxes started from it go on",
		status: 200, response: apiv1.Snapshot{}, errors: []int{400, 401, 404, 409, 502, 503}},

	"GET /api/v1/templates": {id: "listTemplates", summary: "The templates the key may start sandboxes from (templateID on create): the server's own, then its projects', each with every version kept",
		status: 200, response: apiv1.TemplateList{}, errors: []int{401, 501, 503}},
	"POST /api/v1/templates": {id: "createTemplate", summary: "Build a template of the key's project from a recipe, in a sandbox",
		description: "The build runs in the background: the answer (202) is its record, queued. A sandbox of the base (a template, or an image pulled with the credentials given, which are not kept) starts in the key's project, " +
			"sized, admitted and billed as any create's, and bounded by timeout; its steps run in order as root (packages with the base's own package manager, command lines, files); " +
			"then its files become the template's new version, with the recipe's env (in /etc/profile.d), working directory, user, start command and ports. Its sandbox is killed either way. " +
			"A failed build's error names the step that failed and its output's tail; the log (…/builds/{build}/logs) has every line. A name of the server's own templates, or one of the project's being built, is a 409. " +
			"A create (templateID) names the template by its name in the project, or by its ID from any project of the org the key sees.",
		body: apiv1.CreateTemplateRequest{}, bodyRequired: true, status: 202, response: apiv1.TemplateBuild{}, errors: []int{400, 401, 402, 403, 409, 413, 415, 501, 503}},
	"PUT /api/v1/templates/{template}/tags/{tag}": {id: "tagTemplate", summary: "Point a tag of a template at one of its versions (the server's own: the operator's)",
		description: "A create of NAME:TAG then starts from that version: booted, since a warm pool's members and a ready snapshot hold the current version. A tag may be moved to any version kept.",
		body:        apiv1.TagTemplateRequest{}, status: 200, response: apiv1.Template{}, errors: []int{400, 401, 403, 404, 413, 415, 501, 503}},
	"DELETE /api/v1/templates/{template}/tags/{tag}": {id: "untagTemplate", summary: "Remove a tag of a template (the server's own: the operator's)",
		status: 204, errors: []int{400, 401, 403, 404, 501, 503}},
	"GET /api/v1/template-catalog": {id: "templateCatalog", summary: "The server's curated catalog of templates by category, each saying whether it is built (for the create wizard)",
		status: 200, response: apiv1.TemplateCatalog{}, errors: []int{401, 501, 503}},
	"GET /api/v1/templates/{template}/builds": {id: "listTemplateBuilds", summary: "A project's template's builds, newest first",
		status: 200, response: apiv1.TemplateBuildList{}, errors: templateReadErrs},
	"GET /api/v1/templates/{template}/builds/{build}": {id: "getTemplateBuild", summary: "One build of a project's template: its state, step, sandbox and outcome",
		status: 200, response: apiv1.TemplateBuild{}, errors: templateReadErrs},
	"GET /api/v1/templates/{template}/builds/{build}/logs": {id: "templateBuildLogs", summary: "A build's log after a line; with follow=true, each line as it comes until the build ends",
		description: "Without follow, a page of the lines after `after` (at most 500). With follow=true, an NDJSON stream of BuildLogLine, flushed as each comes, that ends after the build's last line (which says how it ended) or when the client goes.",
		query:       []param{{"after", "Only the lines after this one (its seq).", map[string]any{"type": "integer", "minimum": 0}, false}, {"follow", "true: stream each line as it comes until the build ends.", map[string]any{"type": "boolean"}, false}},
		status:      200, response: apiv1.BuildLogPage{}, errors: templateReadErrs},
	"GET /api/v1/templates/{template}": {id: "getTemplate", summary: "A template and every version of it kept",
		status: 200, response: apiv1.Template{}, errors: []int{401, 404, 501, 503}},
	"DELETE /api/v1/templates/{template}": {id: "deleteTemplate", summary: "Delete a template, every version of it, and its ready snapshot (the server's own: the operator's)",
		description: "Refused (409, naming them) while anything stands on the template: sandboxes that are not over (paused and hibernated ones wake on its tree; a warm pool's members count), " +
			"snapshots (a restore reopens the tree of the version it lies on), its warm pool, a ready snapshot being prepared, or a build under way. A create that races the deletion fails as one of a template never built does.",
		status: 204, errors: []int{401, 403, 404, 409, 501, 502, 503}},
	"GET /api/v1/admin/template-warm-pools": {id: "listWarmPools", summary: "Every template's warm pool and what it holds (the operator's)",
		status: 200, response: apiv1.WarmPoolList{}, errors: []int{401, 403}},
	"PUT /api/v1/admin/template-warm-pools/{template}": {id: "setWarmPool", summary: "Keep sandboxes of a template ready for creates to check out (the operator's)",
		description: "The serve that runs the meter starts members until min_ready are ready or starting (within max_ready, the host's room and the owner's plan), at once and every 10 s. " +
			"Members are sandboxes of the operator key's project, billed to it at the paused-storage rate (for their memory) while they wait. A create of the template (warmPool prefer or require) whose size matches checks one out: " +
			"it becomes the caller's, with its own token, env, metadata, timeout and egress policy, in the time of a ledger write and a call to its agent, and is never returned to the pool.",
		body: apiv1.SetWarmPoolRequest{}, bodyRequired: true, status: 200, response: apiv1.WarmPool{}, errors: []int{400, 401, 403, 404, 413, 415, 503}},
	"DELETE /api/v1/admin/template-warm-pools/{template}": {id: "deleteWarmPool", summary: "Delete a template's warm pool and kill its waiting members (the operator's)",
		status: 204, errors: []int{400, 401, 403, 404}},
	"PUT /api/v1/admin/templates/{template}/ready": {id: "prepareTemplate", summary: "Give a template a ready snapshot: its creates restore a started sandbox instead of booting (the operator's)",
		description: "A sandbox of the template boots (its start command started by the agent), the readiness check runs every 200 ms until it passes (command exits 0, or something listens on port), and the sandbox is captured with its memory and processes. " +
			"From then on a create of the template of that size (without volumes, GPU or image) restores the capture, with its own ID, token and env, while the template's version is the one captured; its timeline says so. " +
			"The template's earlier ready snapshots are deleted. The preparation runs in the background: the answer (202, preparing) comes at once, and GET follows it (a 409 while one is under way).",
		body: apiv1.PrepareTemplateRequest{}, bodyRequired: true, status: 202, response: apiv1.ReadyTemplate{}, errors: []int{400, 401, 403, 404, 409, 413, 415, 501, 503}},
	"GET /api/v1/admin/templates/{template}/ready": {id: "readyTemplate", summary: "Where a template's ready snapshot stands (the operator's)",
		status: 200, response: apiv1.ReadyTemplate{}, errors: []int{400, 401, 403}},
	"DELETE /api/v1/admin/templates/{template}/ready": {id: "dropReadyTemplate", summary: "Delete a template's ready snapshot: its creates boot again (the operator's)",
		status: 204, errors: []int{400, 401, 403, 404}},
	"POST /api/v1/volumes": {id: "createVolume", summary: "Make a volume with a size cap in a project",
		description: "A volume is an ext4 filesystem of its size on the provider's host: a write past the cap is ENOSPC inside the sandbox. It outlives the sandboxes that mount it (volumes on create) and serve's restarts; " +
			"one sandbox that is not killed or failed mounts it read-write at a time (a second is a 409 naming the first), any number read-only. A fork or a restore of a snapshot mounts its source's volumes, so a sandbox with a read-write volume is forked only once that volume is free.",
		body: apiv1.CreateVolumeRequest{}, bodyRequired: true, status: 201, response: apiv1.Volume{}, errors: []int{400, 401, 403, 404, 409, 413, 415, 501, 502, 503}},
	"GET /api/v1/volumes": {id: "listVolumes", summary: "The volumes the key reaches, newest first",
		query: []param{limitParam, cursor}, status: 200, response: apiv1.VolumeList{}, errors: []int{400, 401}},
	"GET /api/v1/volumes/{volume}": {id: "getVolume", summary: "A volume, by ID or by name in the key's project", status: 200, response: apiv1.Volume{}, errors: readErrs},
	"DELETE /api/v1/volumes/{volume}": {id: "deleteVolume", summary: "Delete a volume and its data; a 409 names the sandboxes that mount it",
		status: 200, response: apiv1.Volume{}, errors: []int{400, 401, 404, 409, 501, 503}},
	"POST /api/v1/volumes/{volume}/resize": {id: "resizeVolume", summary: "Grow a volume's cap; a 409 names the sandboxes that mount it",
		body: apiv1.ResizeVolumeRequest{}, bodyRequired: true, status: 200, response: apiv1.Volume{}, errors: []int{400, 401, 404, 409, 413, 415, 501, 502, 503}},
	"GET /api/v1/volumes/{volume}/files": {id: "readVolumeFile", summary: "A volume's file, without a sandbox", query: []param{volumePath},
		status: 200, response: binary{}, responseType: "application/octet-stream", errors: readErrs},
	"PUT /api/v1/volumes/{volume}/files": {id: "writeVolumeFile", summary: "Write the body to a volume's file, without a sandbox; parents are made", query: []param{volumePath},
		body: binary{}, bodyType: "application/octet-stream", bodyRequired: true, status: 200, response: apiv1.EntryInfo{}, errors: []int{400, 401, 404, 415, 507}},
	"GET /api/v1/volumes/{volume}/files/list": {id: "listVolumeFiles", summary: "A volume's directory, without a sandbox", query: []param{volumePath},
		status: 200, response: apiv1.EntryList{}, errors: readErrs},

	"POST /api/v1/sandboxes/{id}/ssh": {id: "sandboxSSH", summary: "A short-lived token that opens the sandbox through the SSH gateway, and how to connect",
		description: "The token is the password (or the answer to the gateway's keyboard-interactive question) for ssh -p PORT USER@HOST, where USER is the sandbox's ID: " +
			"it opens this sandbox only, as the API key that made it, until it expires (expires_in seconds, default 300) or that key is revoked. " +
			"A connection wakes a paused sandbox, as any call to its agent. 503 when the server runs no SSH gateway.",
		body: apiv1.SSHAccessRequest{}, status: 201, response: apiv1.SSHAccess{}, errors: []int{400, 401, 404, 409, 503}},

	"GET /api/v1/org/{org}/sandboxes": {id: "orgSandboxes", summary: "The org's sandbox ledger",
		query:  []param{states, {"project_id", "Only this project's sandboxes.", str, false}, limitParam, cursor},
		status: 200, response: apiv1.SandboxList{}, errors: []int{400, 401, 404}},
	"GET /api/v1/org/{org}/sandboxes/usage": {id: "orgSandboxUsage", summary: "Sandbox usage of the org, in total and per project",
		status: 200, response: apiv1.OrgUsage{}, errors: readErrs},
	"GET /api/v1/org/{org}/sandboxes/{provider_sandbox_id}": {id: "orgGetSandbox", summary: "A sandbox of the org by provider sandbox ID",
		status: 200, response: apiv1.Sandbox{}, errors: readErrs},
	"DELETE /api/v1/org/{org}/sandboxes/{provider_sandbox_id}": {id: "orgDeleteSandbox", summary: "Kill a sandbox of the org by provider sandbox ID",
		status: 200, response: apiv1.Sandbox{}, errors: actionErrs},
	"GET /api/v1/org/{org}/sandboxes/{provider_sandbox_id}/logs": {id: "orgSandboxLogs", summary: "A page of the log of a sandbox of the org",
		query: []param{limitParam, cursor}, status: 200, response: apiv1.LogPage{}, errors: []int{400, 401, 404}},

	"GET /api/v1/org/{org}/credits": {id: "orgCredits", summary: "The org's wallet: its balance and newest settlements (owners and admins)",
		query: []param{limitParam}, status: 200, response: apiv1.Credits{}, errors: []int{400, 401, 403, 404}},
	"GET /api/v1/org/{org}/credits/spending": {id: "orgSpending", summary: "Wallet expenditure breakdown over a time range, by project, sandbox, kind, provider and resource (owners and admins)",
		query: []param{{"from", "Start of the range, RFC 3339, exclusive (default: 30 days before to).", str, false},
			{"to", "End of the range, RFC 3339, inclusive (default: now).", str, false}},
		status: 200, response: apiv1.Spending{}, errors: []int{400, 401, 403, 404}},
	"GET /api/v1/rates": {id: "listRates", summary: "The price table: every rate with its effective time",
		status: 200, response: apiv1.RateList{}, errors: []int{400, 401}},
	"POST /api/v1/admin/rates": {id: "addRate", summary: "Set a price from its effective time on (the operator's key)",
		body: apiv1.AddRateRequest{}, bodyRequired: true, status: 201, response: apiv1.Rate{}, errors: []int{400, 401, 403}},
	"POST /api/v1/admin/orgs/{org}/credits": {id: "topUpCredits", summary: "Add credits to an org's balance (the operator's key)",
		body: apiv1.TopUpRequest{}, bodyRequired: true, status: 200, response: apiv1.Balance{}, errors: []int{400, 401, 403, 404}},

	"GET /api/v1/admin/orgs": {id: "listOrgs", summary: "Every org with its plan and verification (the operator's)",
		query: []param{limitParam, cursor}, status: 200, response: apiv1.OrgList{}, errors: []int{400, 401, 403}},
	"POST /api/v1/admin/orgs": {id: "createOrg", summary: "Create an org with a workspace and a project named default and an owner key (the operator's)",
		description: "The org is unverified unless kyc_status says otherwise, and has no limits unless plan sets them. The answer carries the secret of an org-wide key that acts as the org's owner, shown once.",
		body:        apiv1.CreateOrgRequest{}, bodyRequired: true, status: 201, response: apiv1.CreatedOrg{}, errors: []int{400, 401, 403, 409}},
	"PUT /api/v1/admin/orgs/{org}/plan": {id: "setOrgPlan", summary: "Replace an org's plan (the operator's); a limit left out or 0 is no limit",
		description: "Compute limits apply from the next create or resume. The member limit applies at once: the running sandboxes of a workspace over it are paused (pause_reason member_limit_exceeded), and those it paused resume in workspaces back within it; the answer lists both.",
		body:        apiv1.SetPlanRequest{}, bodyRequired: true, status: 200, response: apiv1.PlanChange{}, errors: adminErrs},
	"PUT /api/v1/admin/orgs/{org}/verification": {id: "setOrgVerification", summary: "Set an org's verification (KYC) state (the operator's)",
		body: apiv1.VerificationRequest{}, bodyRequired: true, status: 200, response: apiv1.Org{}, errors: adminErrs},
	"PUT /api/v1/admin/users/{user}/verification": {id: "setUserVerification", summary: "Set a user's verification (KYC) state (the operator's)",
		body: apiv1.VerificationRequest{}, bodyRequired: true, status: 200, response: apiv1.User{}, errors: adminErrs},
	"POST /api/v1/kyc/webhook": {id: "kycWebhook", summary: "An outside KYC service reports the verification state of an org or a user",
		description: kycWebhookDescription, body: apiv1.KYCEvent{}, bodyRequired: true, status: 200, response: apiv1.KYCResult{},
		errors: []int{400, 401, 404, 503}, open: true},

	"GET /api/v1/org/{org}/workspaces": {id: "listWorkspaces", summary: "The workspaces the key reaches (a member's key its user's, a project's key its project's), oldest first",
		query: []param{limitParam, cursor}, status: 200, response: apiv1.WorkspaceList{}, errors: readErrs},
	"POST /api/v1/org/{org}/workspaces": {id: "createWorkspace", summary: "Create a workspace with a project named default (owners and admins); a member's key joins it",
		body: apiv1.CreateWorkspaceRequest{}, bodyRequired: true, status: 201, response: apiv1.Workspace{}, errors: roleErrs},
	"GET /api/v1/org/{org}/ws/{workspace}/projects": {id: "listProjects", summary: "A workspace's projects, oldest first (for keys that reach the workspace; a project's key sees its own)",
		query: []param{limitParam, cursor}, status: 200, response: apiv1.ProjectList{}, errors: []int{400, 401, 403, 404}},
	"POST /api/v1/org/{org}/ws/{workspace}/projects": {id: "createProject", summary: "Create a project and its runtime (owners and admins of the workspace)",
		body: apiv1.CreateProjectRequest{}, bodyRequired: true, status: 201, response: apiv1.Project{}, errors: roleErrs},

	"GET /api/v1/org/{org}/ws/{workspace}/runtimes": {id: "listRuntimes", summary: "A workspace's runtimes (one per project), oldest first; a project-scoped key sees its project's",
		query: []param{limitParam, cursor}, status: 200, response: apiv1.RuntimeList{}, errors: []int{400, 401, 403, 404}},
	"GET /api/v1/org/{org}/ws/{workspace}/runtimes/{runtime_id}": {id: "getRuntime", summary: "A runtime, with its current sandbox's state, pause_reason and credits",
		status: 200, response: apiv1.Runtime{}, errors: []int{400, 401, 403, 404}},
	"PATCH /api/v1/org/{org}/ws/{workspace}/runtimes/{runtime_id}": {id: "updateRuntime", summary: "Change what the runtime's next sandbox is made with",
		description: "The fields given replace the runtime's configuration; a sandbox already running keeps what it was made with.",
		body:        apiv1.UpdateRuntimeRequest{}, bodyRequired: true, status: 200, response: apiv1.Runtime{}, errors: []int{400, 401, 403, 404}},
	"POST /api/v1/org/{org}/ws/{workspace}/runtimes/{runtime_id}/start": {id: "startRuntime", summary: "Provision a sandbox for an idle runtime: idle → running",
		description: "Makes a sandbox (kind runtime) from the runtime's configuration and answers once it is ready. 409 while the runtime has a sandbox that has not ended. 504 when the sandbox was not ready in time: the start kills it, and the runtime is idle again.",
		headers:     []param{idemKey}, body: apiv1.StartRuntimeRequest{}, status: 200, response: apiv1.Runtime{}, errors: []int{400, 401, 402, 403, 404, 409, 422, 502, 503, 504, 507}},
	"POST /api/v1/org/{org}/ws/{workspace}/runtimes/{runtime_id}/pause": {id: "pauseRuntime", summary: "Pause the runtime's sandbox (409 when it has none)",
		status: 200, response: apiv1.Runtime{}, errors: []int{400, 401, 403, 404, 409, 502, 503, 504}},
	"POST /api/v1/org/{org}/ws/{workspace}/runtimes/{runtime_id}/resume": {id: "resumeRuntime", summary: "Resume the runtime's paused sandbox (409 when it has none)",
		status: 200, response: apiv1.Runtime{}, errors: []int{400, 401, 402, 403, 404, 409, 502, 503, 504, 507}},
	"POST /api/v1/org/{org}/ws/{workspace}/runtimes/{runtime_id}/reset": {id: "resetRuntime", summary: "Kill the runtime's sandbox (its row stays, killed) and return the runtime to idle (409 when it has none)",
		status: 200, response: apiv1.Runtime{}, errors: []int{400, 401, 403, 404, 409, 502, 503, 504}},
	"POST /api/v1/org/{org}/ws/{workspace}/runtimes/{runtime_id}/keepalive": {id: "keepaliveRuntime", summary: "Keep the runtime's running sandbox alive longer (409 when it has none)",
		body: apiv1.KeepaliveRuntimeRequest{}, status: 200, response: apiv1.Runtime{}, errors: []int{400, 401, 403, 404, 409}},
	"GET /api/v1/org/{org}/ws/{workspace}/runtimes/{runtime_id}/capabilities": {id: "listRuntimeCapabilities", summary: "A runtime's capability bindings, oldest first",
		query: []param{limitParam, cursor}, status: 200, response: apiv1.CapabilityBindingList{}, errors: []int{400, 401, 403, 404}},
	"POST /api/v1/org/{org}/ws/{workspace}/runtimes/{runtime_id}/capabilities": {id: "installCapability", summary: "Install a capability of the org's inventory or the catalog on a runtime",
		description: installCapabilityDescription, body: apiv1.InstallCapabilityRequest{}, bodyRequired: true, status: 201, response: apiv1.CapabilityBinding{},
		errors: []int{400, 401, 403, 404, 409}},
	"GET /api/v1/org/{org}/ws/{workspace}/runtimes/{runtime_id}/capabilities/resolved": {id: "resolvedCapabilities", summary: "The merged set of the runtime's enabled capabilities, with conflicts",
		description: "What every start of the runtime materializes in its new sandbox, under root, where resolved.json holds this same document. A conflict (an environment variable given two values, an MCP server or tool name defined twice) names both capabilities; the first by name is used. 409: a binding names a catalog version this sbx no longer ships.",
		status:      200, response: apiv1.ResolvedCapabilities{}, errors: []int{400, 401, 403, 404, 409}},
	"PATCH /api/v1/org/{org}/ws/{workspace}/runtimes/{runtime_id}/capabilities/{binding_id}": {id: "updateRuntimeCapability", summary: "Enable or disable a runtime's capability, set its flags, or change its version",
		description: "The fields given change the binding; flags replaces the flags set ({} goes back to every default), and every flag set must be declared by the version the binding ends with (400 naming it). A version must be in the binding's source (404 naming the versions there). Sandboxes get the change at the runtime's next start (after a reset, if it is running).",
		body:        apiv1.UpdateCapabilityRequest{}, bodyRequired: true, status: 200, response: apiv1.CapabilityBinding{}, errors: []int{400, 401, 403, 404, 409}},
	"DELETE /api/v1/org/{org}/ws/{workspace}/runtimes/{runtime_id}/capabilities/{binding_id}": {id: "uninstallCapability", summary: "Uninstall a capability from a runtime",
		status: 200, response: apiv1.CapabilityBinding{}, errors: []int{400, 401, 403, 404}},
	"GET /api/v1/capabilities/catalog": {id: "capabilityCatalog", summary: "The public catalog: the capabilities shipped with this sbx",
		status: 200, response: apiv1.CapabilityList{}, errors: []int{400, 401}},
	"GET /api/v1/org/{org}/capabilities": {id: "capabilityInventory", summary: "The org's inventory of uploaded capability versions, oldest upload first",
		query: []param{limitParam, cursor}, status: 200, response: apiv1.CapabilityList{}, errors: readErrs},
	"POST /api/v1/org/{org}/capabilities": {id: "uploadCapability", summary: "Upload a capability bundle, a tar.gz, to the org's inventory (owners and admins)",
		description: uploadCapabilityDescription, body: binary{}, bodyType: "application/gzip", bodyRequired: true, status: 201, response: apiv1.Capability{},
		errors: roleErrs},
	"DELETE /api/v1/org/{org}/capabilities/{name}/{version}": {id: "deleteCapability", summary: "Remove a version from the org's inventory (owners and admins); a 409 names the bindings that use it",
		status: 200, response: apiv1.Capability{}, errors: roleErrs},
	"GET /api/v1/org/{org}/ws/{workspace}/members": {id: "listMembers", summary: "A workspace's members, by when they joined (for keys that reach the workspace)",
		query: []param{limitParam, cursor}, status: 200, response: apiv1.MemberList{}, errors: []int{400, 401, 403, 404}},
	"POST /api/v1/org/{org}/ws/{workspace}/members": {id: "addMember", summary: "Add a member to a workspace (owners and admins of it, with a role not above theirs)",
		description: "A user new to sbx is made, unverified. Beyond the plan's members per workspace the member is added, and the workspace's running sandboxes are paused with pause_reason member_limit_exceeded (listed in paused); no sandbox starts or resumes there until it is back within the limit.",
		body:        apiv1.AddMemberRequest{}, bodyRequired: true, status: 201, response: apiv1.MemberChange{}, errors: roleErrs},
	"DELETE /api/v1/org/{org}/ws/{workspace}/members/{member}": {id: "removeMember", summary: "Remove a member from a workspace (owners and admins of it); back within the member limit, what it paused resumes",
		status: 200, response: apiv1.MemberChange{}, errors: adminErrs},
	"GET /api/v1/org/{org}/keys": {id: "listKeys", summary: "The org's API keys, revoked ones included (never their secrets)",
		query: []param{limitParam, cursor}, status: 200, response: apiv1.APIKeyList{}, errors: readErrs},
	"POST /api/v1/org/{org}/keys": {id: "createKey", summary: "Make an API key: a member's, a project's, or (owners only) an org-wide one (owners and admins)",
		description: "Making (or revoking) a key needs, in every workspace the key reaches, the admin role and at least the role the key acts with there: an admin makes keys only within the workspaces it administers, and only owners make keys that act as owners (org-wide keys, keys of users who are owners).",
		body:        apiv1.CreateKeyRequest{}, bodyRequired: true, status: 201, response: apiv1.CreatedKey{}, errors: []int{400, 401, 403, 404}},
	"DELETE /api/v1/org/{org}/keys/{key}": {id: "revokeKey", summary: "Revoke an API key at once; it stays listed (owners and admins; org-wide keys owners only)",
		status: 200, response: apiv1.APIKey{}, errors: roleErrs},

	"GET /api/v1/org/{org}/ssh-keys": {id: "listSSHKeys", summary: "The org's SSH keys: public keys the SSH gateway lets in as a member's or a project's API key would be",
		query: []param{limitParam, cursor}, status: 200, response: apiv1.SSHKeyList{}, errors: readErrs},
	"POST /api/v1/org/{org}/ssh-keys": {id: "addSSHKey", summary: "Register a public key to a member or a project",
		description: "An SSH key acts, through the SSH gateway, exactly as an API key of its member or project would: it opens the sandboxes that key reaches. " +
			"A key registers SSH keys that act as it does itself (a member's key for its member, a project's key for its project, with neither user nor project_id); " +
			"any other needs what making that API key needs (the admin role in every workspace it reaches). A key is registered at most once in an org (409), " +
			"at most 100 per member or project.",
		body: apiv1.AddSSHKeyRequest{}, bodyRequired: true, status: 201, response: apiv1.SSHKey{}, errors: []int{400, 401, 403, 404, 409}},
	"DELETE /api/v1/org/{org}/ssh-keys/{ssh_key}": {id: "removeSSHKey", summary: "Remove an SSH key, by ID or fingerprint (whoever may register it); connections it opened stay open",
		status: 200, response: apiv1.SSHKey{}, errors: []int{400, 401, 403, 404}},

	"GET /api/v1/org/{org}/secrets": {id: "listSecrets", summary: "The secrets the key sees: the org's and, for a member's key, the member's own, by name (never their values)",
		status: 200, response: apiv1.SecretList{}, errors: readErrs},
	"POST /api/v1/org/{org}/secrets": {id: "setSecret", summary: "Make a secret (201), or give the one of that name in that scope a new value (200)",
		description: secretsDescription, body: apiv1.SetSecretRequest{}, bodyRequired: true, status: 201, response: apiv1.Secret{},
		also: map[int]any{200: apiv1.Secret{}}, errors: roleErrs},
	"DELETE /api/v1/org/{org}/secrets/{secret}": {id: "deleteSecret", summary: "Remove a secret, value and all (the org's: owners and admins; a member's own: that member's key)",
		query: []param{{"scope", "org: the org's secret; user: the member's own. Default: an ID names one; a name means the member's own secret by that name, else the org's.",
			map[string]any{"type": "string", "enum": []any{"org", "user"}}, false}},
		status: 200, response: apiv1.Secret{}, errors: adminErrs},

	"GET /api/v1/org/{org}/webhooks": {id: "listWebhooks", summary: "The org's webhooks (owners and admins; never their secrets)",
		status: 200, response: apiv1.WebhookList{}, errors: []int{400, 401, 403, 404}},
	"POST /api/v1/org/{org}/webhooks": {id: "createWebhook", summary: "Register a URL that gets the org's events as signed POSTs (owners and admins); the secret is answered only here",
		description: webhooksDescription, body: apiv1.CreateWebhookRequest{}, bodyRequired: true, status: 201, response: apiv1.CreatedWebhook{}, errors: roleErrs},
	"DELETE /api/v1/org/{org}/webhooks/{webhook}": {id: "deleteWebhook", summary: "Remove a webhook and its deliveries (owners and admins)",
		status: 200, response: apiv1.Webhook{}, errors: []int{400, 401, 403, 404}},
	"GET /api/v1/org/{org}/webhooks/{webhook}/deliveries": {id: "listWebhookDeliveries", summary: "A webhook's deliveries, newest event first (owners and admins)",
		query: []param{{"state", "Only deliveries in this state.", map[string]any{"type": "string", "enum": []any{"queued", "in_progress", "succeeded", "dead_letter"}}, false},
			{"limit", "At most this many, 1 to 1000 (default 100).", map[string]any{"type": "integer", "minimum": 1, "maximum": 1000}, false}},
		status: 200, response: apiv1.WebhookDeliveryList{}, errors: []int{400, 401, 403, 404}},
	"POST /api/v1/org/{org}/webhooks/{webhook}/deliveries/{delivery}/redeliver": {id: "redeliverWebhookDelivery", summary: "Queue a delivery again, due now, with a full set of attempts (owners and admins)",
		status: 200, response: apiv1.WebhookDelivery{}, errors: roleErrs},

	"GET /api/v1/org/{org}/ws/{workspace}/sessions": {id: "listSessions", summary: "A workspace's agent sessions, oldest first; a project-scoped key sees its runtime's",
		query:  []param{{"runtime_id", "Only this runtime's sessions.", str, false}, limitParam, cursor},
		status: 200, response: apiv1.SessionList{}, errors: []int{400, 401, 403, 404}},
	"POST /api/v1/org/{org}/ws/{workspace}/sessions": {id: "createSession", summary: "Start an agent session on a runtime of the workspace",
		description: "A session names its runtime, never a sandbox: it outlives every sandbox the runtime starts, pauses or resets.",
		body:        apiv1.CreateSessionRequest{}, bodyRequired: true, status: 201, response: apiv1.Session{}, errors: []int{400, 401, 403, 404}},
	"GET /api/v1/org/{org}/ws/{workspace}/sessions/{session_id}": {id: "getSession", summary: "An agent session",
		status: 200, response: apiv1.Session{}, errors: []int{400, 401, 403, 404}},
	"GET /api/v1/org/{org}/ws/{workspace}/sessions/{session_id}/messages": {id: "listSessionMessages", summary: "A page of a session's transcript, by seq",
		query:  []param{limitParam, {"cursor", "A seq: the page holds the messages after it (the next_cursor of the previous page, or the last seq a client holds).", str, false}},
		status: 200, response: apiv1.SessionMessageList{}, errors: []int{400, 401, 403, 404}},
	"POST /api/v1/org/{org}/ws/{workspace}/sessions/{session_id}/messages": {id: "appendSessionMessages", summary: "Append messages to a session's transcript, all or none; the answer holds them numbered",
		body: apiv1.AppendMessagesRequest{}, bodyRequired: true, status: 201, response: apiv1.SessionMessageList{}, errors: []int{400, 401, 403, 404}},
}

// eventParams are the filters of the org's events.
var eventParams = []param{
	{"after", "Only events after this ID (default 0: from the oldest kept).", map[string]any{"type": "integer", "minimum": 0}, false},
	{"type", "Only events of these types: a type (sandbox.paused) or a prefix (sandbox.*); repeat the parameter or separate types with commas.", str, true},
	{"sandbox", "Only the events of this sandbox (its sandboxID or its sbx ID).", str, false},
	{"project", "Only the events of this project.", str, false},
	{"limit", "At most this many, 1 to 1000 (default 100; a stream reads up to 1000 at a time).", map[string]any{"type": "integer", "minimum": 1, "maximum": 1000}, false},
}

const eventsDescription = `Each event has an ID, dense and increasing per org in commit order,
so a client that reads after the last ID it saw (next) misses none, across restarts of
serve. The key sees what it reaches, as in every other read: an org-wide key every event;
a project's key its project's; a member's key its workspaces' (the org's own credit events
are seen by org-wide keys only). Events are kept for serve --events-retention (default 720h).`

const webhooksDescription = `Each event of the org whose type the webhook names (none: all) is POSTed
to url as JSON (an OrgEvent) with the headers Sbx-Event-Id, Sbx-Event-Type, Sbx-Delivery-Id and
Sbx-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>. A 2xx within 10 s
is success; otherwise the delivery is tried again with exponential backoff (serve
--webhook-backoff, --webhook-attempts), then it is a dead letter, which redeliver queues again.
The URL must be http or https, and reach a public address unless the operator allows private
ones (serve --webhook-private). An org has at most 20 webhooks.`

const secretsDescription = `A secret is the org's (scope org, owners and admins) or the own of the
member a key acts as (scope user, a member's key only). Its value is
write-only: sealed at rest with the server's key and never in any answer; a
runtime's start puts the secrets it chooses by ID in its sandbox's
environment, under their names. A scope holds at most 100 secrets: a new one
beyond is a 409.`

const installCapabilityDescription = `Without source, the org's inventory is searched when it has the name,
else the catalog; without version, the newest (the highest release, or the
highest pre-release when there is no release). An unknown capability or
version is a 404 naming it (and the versions there), a flag the capability
does not declare a 400 naming it, a name the runtime already has a 409 naming
its binding. The runtime's next start materializes it (after a reset, if it is running).`

const uploadCapabilityDescription = `The body is the bundle as a tar.gz (Content-Type: application/gzip), at
most 8 MiB: capability.yaml at its root or in one top-level directory, and
the files it names (docs/CAPABILITIES.md). Only regular files and directories
are accepted: an absolute path, a '..', a link or a device is a 400 naming
the entry, as is a manifest that breaks a rule (naming the field), beyond 512
files or 32 MiB unpacked. A name and version already in the inventory is a
409: a version is uploaded once.`

const kycWebhookDescription = `Needs no API key: the request is signed with the secret shared with the
service (serve --kyc-webhook-secret) in the header
X-Sbx-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">
(several v1 entries may be sent while a secret is rotated). A missing or
wrong signature, or a timestamp more than 5 minutes from the server's clock,
is a 401. An event decided before the state recorded (a late or replayed
one) is answered with applied false and changes nothing. Without a secret
configured the route answers 503.`

// binary is a request or response body of raw bytes.
type binary []byte

// multipartUpload is the body of a multipart file upload.
type multipartUpload struct {
	Files []binary `json:"files" doc:"One part per file; each part's filename is its path under the path parameter."`
}

var (
	pathQuery   = param{"path", "A path inside the sandbox; relative paths are relative to /workspace.", str, false}
	modeQuery   = param{"mode", "The file's permissions in octal, e.g. 755; default 644, or a replaced file's.", str, false}
	userQuery   = param{"user", "The user (name or UID, NAME[:GROUP]) new files and directories belong to; default the sandbox's default user (the template's: user in base and code-interpreter, else root).", str, false}
	agentErrs   = []int{400, 401, 403, 404, 409, 501, 502, 503, 504, 507} // 501: the provider does not serve the route (e2b: the code API); 507: waking the sandbox found no room on the host's disk
	streamsNote = " The stream is NDJSON: one JSON object per line, flushed as it comes."
)

// agentOperations are the agent's routes (apiv1/agent.go), proxied by serve
// under /api/v1/sandboxes/{id}: a paused sandbox is resumed, a hibernated one woken.
var agentOperations = map[string]op{
	"POST /commands": {id: "startCommand", summary: "Start a command; stream its output and end, or answer at once with background",
		description: "Without background the answer is 200 with a stream of CommandEvents: start, stdout and stderr chunks, end." + streamsNote,
		body:        apiv1.StartCommandRequest{}, bodyRequired: true, status: 200, response: apiv1.CommandEvent{}, responseType: apiv1.NDJSON,
		also: map[int]any{201: apiv1.CommandInfo{}}, errors: agentErrs},
	"GET /commands": {id: "listCommands", summary: "Running commands and PTYs, and recently ended ones",
		status: 200, response: apiv1.CommandList{}, errors: agentErrs},
	"GET /commands/{ref}": {id: "getCommand", summary: "A command by PID or tag", status: 200, response: apiv1.CommandInfo{}, errors: agentErrs},
	"DELETE /commands/{ref}": {id: "killCommand", summary: "Kill a command and its whole process group (SIGKILL)",
		status: 200, response: apiv1.CommandInfo{}, errors: agentErrs},
	"GET /commands/{ref}/stream": {id: "streamCommand", summary: "Reconnect: a command's output so far, then live, then its end",
		description: "The output the agent still holds (a bounded buffer from the start) comes first." + streamsNote,
		status:      200, response: apiv1.CommandEvent{}, responseType: apiv1.NDJSON, errors: agentErrs},
	"POST /commands/{ref}/stdin": {id: "writeStdin", summary: "Write the body's bytes to a command's stdin (or its terminal)",
		body: binary{}, bodyType: "application/octet-stream", bodyRequired: true, status: 204, errors: agentErrs},
	"DELETE /commands/{ref}/stdin": {id: "closeStdin", summary: "Close a command's stdin", status: 204, errors: agentErrs},
	"POST /commands/{ref}/signal": {id: "signalCommand", summary: "Send a signal to a command's process group",
		body: apiv1.SignalRequest{}, bodyRequired: true, status: 200, response: apiv1.CommandInfo{}, errors: agentErrs},
	"POST /pty": {id: "startPty", summary: "Start a command (default a login shell) on a new terminal",
		body: apiv1.StartPtyRequest{}, bodyRequired: true, status: 201, response: apiv1.CommandInfo{}, errors: agentErrs},
	"GET /pty/{ref}": {id: "attachPty", summary: "Attach to a terminal over a WebSocket",
		description: "Binary messages carry output (first what is buffered) to the client and input to the terminal; text messages carry PtyControl JSON: resize from the client, exit from the agent. A client that offers the subprotocol sbx.pty is answered with it. A browser, which cannot set headers on a WebSocket, may give its API key as the subprotocol sbx.key.<key> beside sbx.pty; serve takes it off the request, and the sandbox never sees it.",
		status:      101, errors: agentErrs},
	"POST /pty/{ref}/resize": {id: "resizePty", summary: "Resize a terminal", body: apiv1.PtySize{}, bodyRequired: true, status: 204, errors: agentErrs},
	"GET /files": {id: "readFile", summary: "A file's bytes, streamed", query: []param{pathQuery},
		status: 200, response: binary{}, responseType: "application/octet-stream", errors: agentErrs},
	"PUT /files": {id: "writeFile", summary: "Write the body to a file, streamed; parents are made", query: []param{pathQuery, modeQuery, userQuery},
		body: binary{}, bodyType: "application/octet-stream", bodyRequired: true, status: 200, response: apiv1.EntryInfo{}, errors: agentErrs},
	"POST /files": {id: "uploadFiles", summary: "Upload several files (multipart/form-data) under a directory", query: []param{pathQuery, userQuery},
		body: multipartUpload{}, bodyType: "multipart/form-data", bodyRequired: true, status: 200, response: apiv1.EntryList{}, errors: agentErrs},
	"DELETE /files": {id: "removeFile", summary: "Remove a file or a directory, recursively", query: []param{pathQuery}, status: 204, errors: agentErrs},
	"GET /files/list": {id: "listFiles", summary: "A directory's entries to a depth, sorted by path",
		query:  []param{pathQuery, {"depth", "How deep to list; 1 (the default) is the directory's children.", map[string]any{"type": "integer", "minimum": 1}, false}},
		status: 200, response: apiv1.EntryList{}, errors: agentErrs},
	"GET /files/stat": {id: "statFile", summary: "A file's type, size, mode and time", query: []param{pathQuery},
		status: 200, response: apiv1.EntryInfo{}, errors: agentErrs},
	"POST /files/mkdir": {id: "makeDir", summary: "Make a directory and its parents (200 when it already exists)",
		query: []param{userQuery}, body: apiv1.PathRequest{}, bodyRequired: true, status: 201, response: apiv1.EntryInfo{}, also: map[int]any{200: apiv1.EntryInfo{}}, errors: agentErrs},
	"POST /files/move": {id: "moveFile", summary: "Move or rename a file or directory",
		body: apiv1.MoveRequest{}, bodyRequired: true, status: 200, response: apiv1.EntryInfo{}, errors: agentErrs},
	"GET /files/watch": {id: "watchFiles", summary: "Stream a directory's changes until the client leaves",
		description: "Each line is a FileEvent." + streamsNote,
		query:       []param{pathQuery, {"recursive", "Watch subdirectories too.", map[string]any{"type": "boolean"}, false}},
		status:      200, response: apiv1.FileEvent{}, responseType: apiv1.NDJSON, errors: agentErrs},

	"POST /code/contexts": {id: "createCodeContext", summary: "Make a code context: a stateful interpreter (a Jupyter kernel) whose variables, imports and directory persist between executions",
		description: "The kernel (Debian's python3-ipykernel, in the code-interpreter template) starts with the context's first execution, so a sandbox that runs no code pays nothing for it; it lives until the context is deleted or the sandbox ends, across pause and hibernate like any process.",
		body:        apiv1.CreateCodeContextRequest{}, status: 201, response: apiv1.CodeContext{}, errors: agentErrs},
	"GET /code/contexts":          {id: "listCodeContexts", summary: "The sandbox's code contexts", status: 200, response: apiv1.CodeContextList{}, errors: agentErrs},
	"DELETE /code/contexts/{ctx}": {id: "deleteCodeContext", summary: "Delete a code context: its kernel ends", status: 204, errors: agentErrs},
	"POST /code/contexts/{ctx}/restart": {id: "restartCodeContext", summary: "Restart a code context: a new kernel, its state gone (also what revives a dead one)",
		status: 200, response: apiv1.CodeContext{}, errors: agentErrs},
	"POST /code/contexts/{ctx}/interrupt": {id: "interruptCodeContext", summary: "Interrupt what a code context runs (KeyboardInterrupt); the context lives on",
		status: 204, errors: agentErrs},
	"POST /code/execute": {id: "executeCode", summary: "Run code in a code context and stream what it gives: output, results as MIME bundles, an error, and the end",
		description: "Without contextId, the code runs in its language's default context, made on first use. Each line is a CodeEvent, as the kernel publishes it: stdout and stderr text; results (the last expression's value, isMainResult, and whatever is displayed: a matplotlib figure comes as image/png without plt.show()); an error with its name, value and traceback; " +
			"then the end with its status, the context's execution count and the duration. A timeout interrupts the kernel (status timeout) and the context lives on. A kernel that dies ends the stream with an error and leaves the context dead until restarted." + streamsNote,
		body: apiv1.ExecuteCodeRequest{}, bodyRequired: true, status: 200, response: apiv1.CodeEvent{}, responseType: apiv1.NDJSON, errors: agentErrs},
}

func init() {
	for k, o := range agentOperations {
		method, path, _ := strings.Cut(k, " ")
		operations[method+" /api/v1/sandboxes/{id}"+path] = o
	}
}

var pathParams = map[string]string{
	"id":                  "The sandbox's provider sandbox ID (sandboxID) or its sbx UUID (id).",
	"org":                 "The org's ID or name. Under /org/ any org but the caller's is not found; under /admin/ (the operator's routes) it is any org.",
	"workspace":           "The workspace's ID or name, in the org.",
	"member":              "The member's user ID or email.",
	"key":                 "The key's ID.",
	"secret":              "The secret's ID or name.",
	"session_id":          "The session's ID.",
	"user":                "The user's ID or email.",
	"provider_sandbox_id": "The sandbox's provider sandbox ID (its sbx UUID also works).",
	"ref":                 "A command's PID or tag.",
	"ctx":                 "The code context's ID.",
	"runtime_id":          "The runtime's ID.",
	"binding_id":          "The capability binding's ID.",
	"name":                "The capability's name.",
	"version":             "The capability's version.",
}

var errorText = map[int]string{
	400: "The request is malformed; errors[] names each bad field.",
	401: "No API key, or not a valid one.",
	402: "The org has no credits left (type insufficient_credits); detail names the balance. Top up to go on.",
	403: "Refused: the key's role does not allow it (forbidden, naming the role needed), the org or user must be verified first (kyc_required), a plan limit is reached (plan_limit_exceeded, naming the limit, the use and the plan's value), or the sandbox's agent was denied access to the path.",
	404: "No such sandbox, org, workspace, project, member or key visible to the caller.",
	409: "The sandbox's state does not allow this; detail names the state.",
	422: "The Idempotency-Key was sent within the last 24 hours with another request (type idempotency_key_reused).",
	413: "The request body is larger than the operation takes (type too_large).",
	415: "The request body is not of the type the operation takes (a JSON body needs Content-Type: application/json).",
	501: "The provider does not support this.",
	502: "The provider failed the operation; detail says how.",
	503: "The provider is not available; detail names it.",
	500: "An unexpected failure inside sbx; it is logged.",
	504: "The sandbox was not ready within the bounded wait (detail carries the diagnostic), or stayed busy while the caller waited.",
	507: "The host's disk has no room for the sandbox's writable layer above the reserve the operator keeps (type insufficient_storage); detail says what is free and reserved. Ask for a smaller diskMB or delete sandboxes.",
}

// generate builds the document.
func generate() ([]byte, error) {
	g := &gen{schemas: map[string]any{}}
	paths := map[string]map[string]any{}
	keys := make([]string, 0, len(operations))
	for k := range operations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		method, path, _ := strings.Cut(key, " ")
		o := operations[key]
		item := map[string]any{"operationId": o.id, "summary": o.summary}
		if o.description != "" {
			item["description"] = o.description
		}
		var params []any
		for _, name := range regexp.MustCompile(`\{([a-z_]+)\}`).FindAllStringSubmatch(path, -1) {
			params = append(params, map[string]any{"name": name[1], "in": "path", "required": true, "description": pathParams[name[1]], "schema": str})
		}
		for _, q := range o.query {
			p := map[string]any{"name": q.name, "in": "query", "description": q.description, "schema": q.schema}
			if q.repeat {
				p["schema"], p["explode"], p["style"] = map[string]any{"type": "array", "items": q.schema}, true, "form"
			}
			params = append(params, p)
		}
		for _, h := range o.headers {
			params = append(params, map[string]any{"name": h.name, "in": "header", "description": h.description, "schema": h.schema})
		}
		if params != nil {
			item["parameters"] = params
		}
		if o.body != nil {
			item["requestBody"] = map[string]any{"required": o.bodyRequired,
				"content": map[string]any{cmp.Or(o.bodyType, "application/json"): map[string]any{"schema": g.schema(reflect.TypeOf(o.body))}}}
		}
		ok := map[string]any{"description": http.StatusText(o.status)}
		if o.response != nil {
			ok["content"] = map[string]any{cmp.Or(o.responseType, "application/json"): map[string]any{"schema": g.schema(reflect.TypeOf(o.response))}}
		}
		responses := map[string]any{strconv.Itoa(o.status): ok}
		for code, body := range o.also {
			r := map[string]any{"description": http.StatusText(code)}
			if body != nil {
				r["content"] = map[string]any{"application/json": map[string]any{"schema": g.schema(reflect.TypeOf(body))}}
			}
			responses[strconv.Itoa(code)] = r
		}
		errs := o.errors
		if o.body != nil {
			errs = append(errs[:len(errs):len(errs)], 413, 415)
		}
		if !o.open {
			errs = append(errs[:len(errs):len(errs)], 500)
		}
		for _, code := range errs {
			responses[strconv.Itoa(code)] = map[string]any{"$ref": fmt.Sprintf("#/components/responses/E%d", code)}
		}
		for _, code := range o.rpcErrors {
			responses[strconv.Itoa(code)] = map[string]any{"description": errorText[code] + " Or a JSON-RPC error response (an unsupported protocol version, a header that does not match the message), which MCP clients act on.",
				"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"type": "object"}}}}
		}
		item["responses"] = responses
		if o.open {
			item["security"] = []any{}
		}
		if paths[path] == nil {
			paths[path] = map[string]any{}
		}
		paths[path][strings.ToLower(method)] = item
	}
	errResponses := map[string]any{}
	errSchema := g.schema(reflect.TypeOf(apiv1.Error{}))
	for code, text := range errorText {
		errResponses[fmt.Sprintf("E%d", code)] = map[string]any{"description": text,
			"content": map[string]any{"application/json": map[string]any{"schema": errSchema}}}
	}
	doc := map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{"title": "sbx API", "version": "1",
			"description": "Sandboxes and the ledger of what they ran and cost. Times are RFC 3339 UTC, durations whole seconds, credits decimal strings. Lists page with limit and cursor."},
		"paths":    paths,
		"security": []any{map[string]any{"bearer": []any{}}, map[string]any{"apiKey": []any{}}},
		"components": map[string]any{
			"schemas":   g.schemas,
			"responses": errResponses,
			"securitySchemes": map[string]any{
				"bearer": map[string]any{"type": "http", "scheme": "bearer", "description": "Authorization: Bearer <API key>"},
				"apiKey": map[string]any{"type": "apiKey", "in": "header", "name": "X-API-Key"},
			},
		},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	err := enc.Encode(doc)
	return buf.Bytes(), err
}

type gen struct{ schemas map[string]any }

var timeType = reflect.TypeOf(time.Time{})

// schema returns the JSON schema of t; named structs become components.
func (g *gen) schema(t reflect.Type) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == reflect.TypeOf(json.RawMessage{}):
		return map[string]any{"type": "object"}
	case t == reflect.TypeOf(binary{}):
		return map[string]any{"type": "string", "format": "binary"}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return map[string]any{"type": "string", "format": "byte"}
	case t.Kind() == reflect.Interface: // any JSON value
		return map[string]any{}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.schema(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Uint16:
		return map[string]any{"type": "integer", "minimum": 0, "maximum": 65535}
	case reflect.Int, reflect.Int64:
		return map[string]any{"type": "integer", "format": "int64"}
	case reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schema(t.Elem())}
	case reflect.Struct:
		if t.Name() == "" {
			return map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{}}
		}
		ref := map[string]any{"$ref": "#/components/schemas/" + t.Name()}
		if _, done := g.schemas[t.Name()]; done {
			return ref
		}
		g.schemas[t.Name()] = nil // guards recursion
		props, required := map[string]any{}, []string{}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			s := g.schema(f.Type)
			s = withTags(s, f.Tag)
			props[name] = s
			if !strings.Contains(opts, "omitempty") {
				required = append(required, name)
			}
		}
		obj := map[string]any{"type": "object", "additionalProperties": false, "properties": props}
		if len(required) > 0 {
			obj["required"] = required
		}
		g.schemas[t.Name()] = obj
		return ref
	}
	panic("openapi: no schema for " + t.String())
}

// withTags adds what a field's tags say to its schema: enum (comma separated),
// minimum, maximum, pattern and doc (the description).
func withTags(s map[string]any, tag reflect.StructTag) map[string]any {
	out := map[string]any{}
	for k, v := range s {
		out[k] = v
	}
	number := func(v string) any {
		if n, err := strconv.Atoi(v); err == nil && s["type"] == "integer" {
			return n
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil && s["type"] != "string" {
			return f
		}
		return v
	}
	if enum := tag.Get("enum"); enum != "" {
		var values []any
		for _, v := range strings.Split(enum, ",") {
			values = append(values, number(v))
		}
		out["enum"] = values
	}
	for _, key := range []string{"minimum", "maximum"} {
		if v := tag.Get(key); v != "" {
			out[key] = number(v)
		}
	}
	if v := tag.Get("pattern"); v != "" {
		out["pattern"] = v
	}
	if v := tag.Get("doc"); v != "" && out["$ref"] == nil {
		out["description"] = v
	}
	return out
}

func writeDocument(data []byte) error { return os.WriteFile("openapi.json", data, 0o644) }

package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx/apiv1"
)

// CreateOptions are the optional parts of a create; the zero value of each
// field leaves the server's default.
type CreateOptions struct {
	Timeout   time.Duration // lifetime before the sandbox is killed (or paused, with AutoPause)
	WaitReady bool          // answer only once the sandbox runs
	EnvVars   map[string]string
	Metadata  map[string]string
	AutoPause bool    // on timeout, pause instead of kill
	CPU       float64 // vCPU
	MemoryMB  int64
	DiskMB    int64 // cap of the writable layer, in MiB
	GPU       *apiv1.GPU
	Kind      string         // task (default), runtime or world
	Preview   *apiv1.Preview // who reaches its preview URLs (default private) and whether their traffic wakes it
	Ports     []int          // the ports it serves, listed with their preview URLs
	// Egress is what the sandbox may connect to; nil: its template's
	// default, else the server's.
	Egress *apiv1.Egress
	// ProjectID, when set, is the project the sandbox belongs to, one the
	// key reaches; default the key's.
	ProjectID string
	// Image, when set, is the OCI image to start from, with the
	// credentials of its pull; give Create no template then.
	Image *apiv1.Image
	// SnapshotID, in place of a template, starts the sandbox from a
	// snapshot (with its sizes: CPU, MemoryMB and DiskMB must be zero).
	SnapshotID string
	// Volumes of its project to mount.
	Volumes []apiv1.VolumeMount
	// WarmPool is how the create uses the template's warm pool: prefer
	// (""), require or bypass.
	WarmPool string
	// Provider is the provider the sandbox runs on, one of the server's;
	// default the server's default.
	Provider string
	// IdempotencyKey makes the create safe to retry: the same key with the
	// same options answers the sandbox the first request made. Create
	// makes one when it is empty, and retries with it when the connection
	// fails before an answer comes.
	IdempotencyKey string
}

// createTries is how often Create sends a request whose connection failed.
const createTries = 3

// ConnectOptions are the optional parts of a connect.
type ConnectOptions struct {
	Timeout           time.Duration // new lifetime from now; zero keeps the sandbox's timeout
	RotateAccessToken bool          // a new access token; the old one stops working
}

// ListOptions filter and page a list of the caller's sandboxes.
type ListOptions struct {
	States   []string          // any of these states
	Template string            // this template only
	Metadata map[string]string // every one of these pairs
	Limit    int               // page size; the server's default when zero
	Cursor   string            // next_cursor of the previous page
}

// Create starts a sandbox from template (or, with "", from opts.Image or
// opts.SnapshotID);
// opts may be nil.
func (c *Client) Create(ctx context.Context, template string, opts *CreateOptions) (*Sandbox, error) {
	if opts == nil {
		opts = &CreateOptions{}
	}
	req := apiv1.CreateSandboxRequest{
		TemplateID: template, Timeout: seconds(opts.Timeout), WaitReady: opts.WaitReady,
		EnvVars: opts.EnvVars, Metadata: opts.Metadata, AutoPause: opts.AutoPause,
		GPU: opts.GPU, Kind: opts.Kind, Preview: opts.Preview, Ports: opts.Ports, Egress: opts.Egress, Image: opts.Image, ProjectID: opts.ProjectID,
		SnapshotID: opts.SnapshotID, Volumes: opts.Volumes, WarmPool: opts.WarmPool, Provider: opts.Provider,
	}
	if opts.CPU != 0 {
		req.CPU = &opts.CPU
	}
	if opts.MemoryMB != 0 {
		req.MemoryMB = &opts.MemoryMB
	}
	if opts.DiskMB != 0 {
		req.DiskMB = &opts.DiskMB
	}
	key := opts.IdempotencyKey
	if key == "" {
		key = uuid.NewString()
	}
	var out apiv1.Sandbox
	var err error
	for try := 1; ; try++ {
		err = c.doWith(ctx, http.MethodPost, "/api/v1/sandboxes", nil, http.Header{apiv1.IdempotencyHeader: {key}}, req, &out)
		var answered *apiv1.Error
		if err == nil || errors.As(err, &answered) || ctx.Err() != nil || try == createTries {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return c.handle(&out), nil
}

// Connect reconnects to a sandbox by ID or UUID, resuming it when paused, and
// returns a handle with fresh runtime access; opts may be nil.
func (c *Client) Connect(ctx context.Context, id string, opts *ConnectOptions) (*Sandbox, error) {
	if opts == nil {
		opts = &ConnectOptions{}
	}
	out, err := c.action(ctx, id, "connect", apiv1.ConnectRequest{Timeout: seconds(opts.Timeout), RotateAccessToken: opts.RotateAccessToken})
	if err != nil {
		return nil, err
	}
	return c.handle(out), nil
}

// Get fetches a sandbox, with its timeline, by provider sandbox ID or UUID.
func (c *Client) Get(ctx context.Context, id string) (*apiv1.Sandbox, error) {
	return call[apiv1.Sandbox](ctx, c, http.MethodGet, sandboxPath(id), nil, nil)
}

// List returns one page of the caller's sandboxes, newest first.
func (c *Client) List(ctx context.Context, opts ListOptions) (*apiv1.SandboxList, error) {
	q := url.Values{"state": opts.States}
	if opts.Template != "" {
		q.Set("template", opts.Template)
	}
	keys := make([]string, 0, len(opts.Metadata))
	for k := range opts.Metadata {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		q.Add("metadata", k+"="+opts.Metadata[k])
	}
	return call[apiv1.SandboxList](ctx, c, http.MethodGet, "/api/v1/sandboxes", page(q, opts.Limit, opts.Cursor), nil)
}

// Delete kills a sandbox; its row stays in the ledger. It answers the
// sandbox as killed.
func (c *Client) Delete(ctx context.Context, id string) (*apiv1.Sandbox, error) {
	return call[apiv1.Sandbox](ctx, c, http.MethodDelete, sandboxPath(id), nil, nil)
}

// Pause pauses a running sandbox, frozen in memory.
func (c *Client) Pause(ctx context.Context, id string) (*apiv1.Sandbox, error) {
	return c.action(ctx, id, "pause", apiv1.PauseRequest{})
}

// Hibernate checkpoints a running or paused sandbox to disk and releases its
// processes and memory; Resume restores it.
func (c *Client) Hibernate(ctx context.Context, id string) (*apiv1.Sandbox, error) {
	return c.action(ctx, id, "pause", apiv1.PauseRequest{Hibernate: true})
}

// Resume resumes a paused sandbox; timeout 0 keeps its timeout.
func (c *Client) Resume(ctx context.Context, id string, timeout time.Duration) (*apiv1.Sandbox, error) {
	return c.action(ctx, id, "resume", apiv1.TimeoutRequest{Timeout: seconds(timeout)})
}

// Refresh keeps a running sandbox alive for at least d more (at most an
// hour); d 0 asks for the server's default.
func (c *Client) Refresh(ctx context.Context, id string, d time.Duration) (*apiv1.Sandbox, error) {
	return c.action(ctx, id, "refreshes", apiv1.RefreshRequest{Duration: seconds(d)})
}

// SetTimeout sets a sandbox's timeout to d from now.
func (c *Client) SetTimeout(ctx context.Context, id string, d time.Duration) (*apiv1.Sandbox, error) {
	return c.action(ctx, id, "timeout", apiv1.TimeoutRequest{Timeout: seconds(d)})
}

// SetEgress replaces a running or paused sandbox's egress policy, at once.
func (c *Client) SetEgress(ctx context.Context, id string, e apiv1.Egress) (*apiv1.Sandbox, error) {
	return call[apiv1.Sandbox](ctx, c, http.MethodPut, sandboxPath(id, "egress"), nil, e)
}

// Logs returns a page of a sandbox's log, oldest first; limit 0 is the
// server's default.
func (c *Client) Logs(ctx context.Context, id, cursor string, limit int) (*apiv1.LogPage, error) {
	return call[apiv1.LogPage](ctx, c, http.MethodGet, sandboxPath(id, "logs"), page(nil, limit, cursor), nil)
}

// Metrics measures a running sandbox now.
func (c *Client) Metrics(ctx context.Context, id string) (*apiv1.Metrics, error) {
	return call[apiv1.Metrics](ctx, c, http.MethodGet, sandboxPath(id, "metrics"), nil, nil)
}

// CreatePreviewLink makes a link to port of a sandbox that works without
// other credentials for ttl (0: an hour); its URL, with its token, is
// answered only now.
func (c *Client) CreatePreviewLink(ctx context.Context, id string, port int, ttl time.Duration) (*apiv1.PreviewLink, error) {
	return call[apiv1.PreviewLink](ctx, c, http.MethodPost, sandboxPath(id, "previews"), nil,
		apiv1.CreatePreviewLinkRequest{Port: port, Expires: seconds(ttl)})
}

// PreviewLinks lists a sandbox's preview links, newest first, without
// their tokens.
func (c *Client) PreviewLinks(ctx context.Context, id string) (*apiv1.PreviewLinkList, error) {
	return call[apiv1.PreviewLinkList](ctx, c, http.MethodGet, sandboxPath(id, "previews"), nil, nil)
}

// RevokePreviewLink ends a preview link at once.
func (c *Client) RevokePreviewLink(ctx context.Context, id, linkID string) (*apiv1.PreviewLink, error) {
	return call[apiv1.PreviewLink](ctx, c, http.MethodDelete, sandboxPath(id, "previews", linkID), nil, nil)
}

// action posts body to a sandbox's action route and answers the sandbox.
func (c *Client) action(ctx context.Context, id, verb string, body any) (*apiv1.Sandbox, error) {
	return call[apiv1.Sandbox](ctx, c, http.MethodPost, sandboxPath(id, verb), nil, body)
}

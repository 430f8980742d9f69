// Package lifecycle is the sandbox state machine. Every change of a sandbox's
// state goes through a Manager, the core: it writes the intent to the ledger,
// calls the provider, and settles the outcome, so that a crash at any point
// leaves a row that Reconcile can finish. Over the core, each with a Store
// interface of its own (store.go): Runtimes (a project's runtimes and their
// capabilities), Members (the member limit of members and plans) and Loops
// (the meter and the reaper).
package lifecycle

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/keyed"
	"github.com/sbxdev/sbx/ledger"
	"github.com/sbxdev/sbx/pricing"
)

// Config bounds what callers may ask for.
type Config struct {
	DefaultProvider string        // the provider new sandboxes go to
	DefaultTimeout  time.Duration // when a create names none (3600 s)
	MaxTimeout      time.Duration // the largest timeout a caller may set
	ReadyTimeout    time.Duration // how long waitReady waits before a 504
	CreateTimeout   time.Duration // how long a provider may take to create
	HibernateAfter  time.Duration // idle policy: hibernate sandboxes paused this long; 0 never
	RequireKYC      bool          // the KYC gate: creates need a verified org or user
	Limits          Limits        // what one sandbox may ask for, and the defaults (asks.go)
	Egress          EgressConfig  // the default egress policy and the modes a sandbox may have (egress.go)
	MaxForks        int           // the most children one fork makes (default 16)
}

// Manager drives sandboxes through their lifecycle: creates, transitions,
// agents and their streams, reconcile, watchers, asks, and the reads of
// logs, metrics and usage. The seams over it (Runtimes, Members, Loops)
// change sandboxes only through it.
type Manager struct {
	store     Store
	providers map[string]sbx.Provider
	missing   map[string]string // providers known by name but not available, and why
	cfg       Config
	clock     sbx.Clock
	log       *slog.Logger
	owner     string // the owner ID of the operations this manager runs (Owner)

	locks     keyed.Mutex // per sandbox ID, and "runtime/" + a runtime's ID
	mu        sync.Mutex
	creating  map[string]chan struct{} // closed when the create settles
	preparing map[string]string        // templates whose ready snapshot this serve prepares ("") or failed to ("failed: why")
	handing   map[string]chan struct{} // sandboxes checked out of a warm pool whose handover is under way (pools.go)
	wg        sync.WaitGroup           // background creates, and kills of abandoned ones
	wake      chan struct{}            // tells the reaper an expiry changed
	poolWake  chan struct{}            // tells the pools' refill a member was checked out or a pool changed
	streams   streams                  // requests in flight to agents (streams.go)

	pricesMu sync.Mutex
	prices   pricing.Table // for running credits; read again after pricesTTL
	pricesAt time.Time
}

// New returns a Manager over store with the given providers.
func New(store Store, providers []sbx.Provider, cfg Config, clock sbx.Clock, log *slog.Logger) *Manager {
	if cfg.DefaultTimeout == 0 {
		cfg.DefaultTimeout = time.Hour
	}
	if cfg.MaxTimeout == 0 {
		cfg.MaxTimeout = 24 * time.Hour
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 60 * time.Second
	}
	if cfg.CreateTimeout == 0 {
		cfg.CreateTimeout = 5 * time.Minute
	}
	if cfg.MaxForks == 0 {
		cfg.MaxForks = 16
	}
	cfg.Limits = cfg.Limits.withDefaults()
	m := &Manager{
		store: store, providers: map[string]sbx.Provider{}, missing: map[string]string{},
		cfg: cfg, clock: clock, log: log,
		creating: map[string]chan struct{}{}, preparing: map[string]string{}, handing: map[string]chan struct{}{}, wake: make(chan struct{}, 1), poolWake: make(chan struct{}, 1),
		owner: newToken()[:24],
	}
	for _, p := range providers {
		m.providers[p.Name()] = p
	}
	return m
}

// Owner is this manager's operation owner ID, which every row it sets an
// intent on carries (sbx.Sandbox's OpOwner) and which its serve holds live
// in the ledger (Store.Hold) for as long as it runs.
func (m *Manager) Owner() string { return m.owner }

// Config returns the manager's effective configuration.
func (m *Manager) Config() Config { return m.cfg }

// MarkMissing records a provider that this server knows of but cannot use, so
// that requests for it get a 503 naming the reason.
func (m *Manager) MarkMissing(name, why string) { m.missing[name] = why }

// ProviderStatus is one provider's availability.
type ProviderStatus struct {
	Name         string
	Available    bool
	Default      bool
	Detail       string
	Capabilities sbx.Capabilities
}

// Providers reports every known provider's availability, sorted by name.
func (m *Manager) Providers(ctx context.Context) []ProviderStatus {
	var out []ProviderStatus
	for name, p := range m.providers {
		st := ProviderStatus{Name: name, Available: true, Default: name == m.cfg.DefaultProvider, Capabilities: p.Capabilities(), Detail: "ready"}
		if c, ok := p.(sbx.Checker); ok {
			if err := c.Check(ctx); err != nil {
				st.Available, st.Detail = false, err.Error()
			}
		}
		out = append(out, st)
	}
	for name, why := range m.missing {
		if _, ok := m.providers[name]; !ok {
			out = append(out, ProviderStatus{Name: name, Default: name == m.cfg.DefaultProvider, Detail: why})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Wait blocks until background creates and kills have settled or ctx ends.
func (m *Manager) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// providerNames are the names of the providers this server has, sorted,
// those down included.
func (m *Manager) providerNames() []string {
	var names []string
	for name := range m.providers {
		names = append(names, name)
	}
	for name := range m.missing {
		if _, ok := m.providers[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// provider returns the named provider or a 503 that says why it is missing.
func (m *Manager) provider(name string) (sbx.Provider, error) {
	if p, ok := m.providers[name]; ok {
		return p, nil
	}
	if why, ok := m.missing[name]; ok {
		return nil, sbx.Errorf(sbx.EUnavailable, "provider %q is not available: %s", name, why)
	}
	return nil, sbx.Errorf(sbx.EUnavailable, "provider %q is not configured on this server", name)
}

// Get returns the caller's sandbox by either of its IDs: a project's key
// sees its project's sandboxes, a member's key those of the workspaces its
// user is a member of, any other key all of the org's.
func (m *Manager) Get(ctx context.Context, c sbx.Caller, ref string) (sbx.Sandbox, error) {
	sb, err := m.store.GetSandbox(ctx, c.Org.ID, ref)
	if err == nil {
		err = m.Sees(ctx, c, sb, ref)
	}
	if err != nil {
		return sbx.Sandbox{}, err
	}
	return sb, nil
}

// Sees refuses sandbox sb, named ref, as not found unless c's key reaches
// it: a sandbox of c's org, and of its project for a project's key, of a
// workspace its user is a member of for a member's key.
func (m *Manager) Sees(ctx context.Context, c sbx.Caller, sb sbx.Sandbox, ref string) error {
	notFound := sbx.Errorf(sbx.ENotFound, "sandbox %s not found", ref)
	switch {
	case sb.OrgID != c.Org.ID:
		return notFound
	case !c.OrgWide() && sb.ProjectID != c.Key.ProjectID:
		return notFound
	case c.MemberScoped():
		role, err := m.store.MemberRole(ctx, sb.WorkspaceID, c.User.ID)
		if err == nil && role == "" {
			err = notFound
		}
		return err
	}
	return nil
}

// Timeline returns a sandbox's steps.
func (m *Manager) Timeline(ctx context.Context, sb sbx.Sandbox) ([]sbx.Event, error) {
	return m.store.Events(ctx, sb.ID)
}

// Detail is a sandbox with what its row leaves out: its volumes.
func (m *Manager) Detail(ctx context.Context, sb sbx.Sandbox) (sbx.Sandbox, error) {
	var err error
	sb.Volumes, err = m.store.SandboxVolumes(ctx, sb.ID)
	return sb, err
}

// List returns a page of the caller's sandboxes.
func (m *Manager) List(ctx context.Context, c sbx.Caller, f ledger.Filter) ([]sbx.Sandbox, string, error) {
	f.OrgID = c.Org.ID
	if c.MemberScoped() {
		f.MemberID = c.User.ID
	}
	if !c.OrgWide() {
		if f.ProjectID != "" && f.ProjectID != c.Key.ProjectID {
			return nil, "", nil
		}
		f.ProjectID = c.Key.ProjectID
	}
	return m.store.ListSandboxes(ctx, f)
}

// event is a timeline step at the manager's now.
func (m *Manager) event(step, detail string) sbx.Event {
	return sbx.Event{At: m.clock.Now(), Step: step, Detail: detail}
}

// notifyReaper wakes the reaper after an expiry changed.
func (m *Manager) notifyReaper() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// lock takes the per-sandbox lock, giving up when ctx ends.
func (m *Manager) lock(ctx context.Context, id string) (unlock func(), err error) {
	if err := m.locks.Lock(ctx, id); err != nil {
		return nil, sbx.Errorf(sbx.ETimeout, "sandbox %s is busy with another operation", id)
	}
	return func() { m.locks.Unlock(id) }, nil
}

// newToken returns a random access token, unrelated to any ID.
func newToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// newProviderID returns a short random sandbox ID in the style users know from E2B.
func newProviderID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return "i" + string(b[1:])
}

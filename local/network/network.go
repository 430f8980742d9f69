// Package network gives each local sandbox its own network: a network
// namespace (/run/netns/<table>-<id>) holding one end of a veth pair, named eth0,
// with an IPv4 address from a /30 of a pool; the host end is the sandbox's
// gateway. One nftables table (family inet) NATs the pool to the outside and
// enforces each sandbox's egress policy (Policy): the internet, nothing, or
// an allow-list, less a deny-list; private, link-local, loopback and
// reserved ranges, other sandboxes and the host itself never. Domain names
// in a policy are resolved on the host and kept current (resolve.go).
//
// The Manager records each attachment as a JSON file in its state directory.
// The nftables table is derived from those records and replaced atomically on
// every change, so a restarted process picks up where the last one left off
// and running sandboxes keep their network throughout.
package network

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Config configures a Manager. Only StateDir is required.
type Config struct {
	Pool     netip.Prefix // addresses for sandboxes, split into /30s; default 10.201.0.0/16
	StateDir string       // where each attachment is recorded, one JSON file per sandbox
	// Table names the instance (instance.go): it is the nftables table
	// (family inet), the prefix of namespace names and part of the hash
	// that names host interfaces; default "sbx". New refuses a name that
	// another instance with another StateDir holds, and a Pool that
	// overlaps another sbx table's.
	Table string

	// Nameservers may be reached on port 53 (udp and tcp) by every sandbox
	// without DenyAll (and by those whose allow-list names a domain), even
	// on private addresses. Default: the IPv4 nameservers in
	// /etc/resolv.conf.
	Nameservers []netip.Addr

	// Resolver looks up the domain names of policies; default: the
	// host's own (/etc/hosts, then the nameservers of /etc/resolv.conf),
	// asking Nameservers instead when they are given.
	Resolver Resolver
	// ResolveEvery is how often KeepCurrent looks the names up again;
	// default 30 s.
	ResolveEvery time.Duration
	// ResolveLinger is how long an address a name no longer resolves to
	// stays in the sandbox's sets, for the clients that still hold it in a
	// cache; default 5 minutes.
	ResolveLinger time.Duration
	// Log is where failed lookups are told; default nowhere.
	Log *slog.Logger
}

// Attachment is a sandbox's network.
type Attachment struct {
	ID      string       // the sandbox's provider ID
	Netns   string       // path of the network namespace, for the OCI spec
	HostIf  string       // host end of the veth
	Addr    netip.Prefix // the sandbox's address, with its /30 prefix length
	Gateway netip.Addr   // the host end's address
	Policy  Policy
	// Resolved are the addresses the policy's names resolve to, by name:
	// what its sets hold for them.
	Resolved map[string][]Resolved `json:",omitempty"`
}

// Manager attaches sandboxes to the network. It is safe for concurrent use.
type Manager struct {
	cfg Config

	mu       sync.Mutex
	attached map[string]Attachment // by ID; mirrors the records in cfg.StateDir
}

const (
	defaultTable = "sbx"
	netnsDir     = "/run/netns"
)

var (
	defaultPool = netip.MustParsePrefix("10.201.0.0/16")
	validID     = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
	validTable  = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)
)

// New checks cfg, claims its name and pool on this host (instance.go),
// enables IPv4 forwarding and (re)installs the nftables table from the
// attachments recorded in cfg.StateDir, so that a restart keeps running
// sandboxes' rules and addresses.
func New(cfg Config) (*Manager, error) {
	cfg, err := withDefaults(cfg)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	done, err := claim(ctx, cfg)
	if err != nil {
		return nil, err
	}
	m, err := open(ctx, cfg)
	if err := errors.Join(err, done(err == nil)); err != nil {
		return nil, err
	}
	return m, nil
}

// open installs the table of cfg's recorded attachments.
func open(ctx context.Context, cfg Config) (*Manager, error) {
	attached, err := loadRecords(cfg.StateDir, cfg.Pool)
	if err != nil {
		return nil, err
	}
	if err := enableForwarding(); err != nil {
		return nil, err
	}
	if err := shareNetnsDir(); err != nil {
		return nil, err
	}
	m := &Manager{cfg: cfg, attached: attached}
	if err := m.syncRules(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

func withDefaults(cfg Config) (Config, error) {
	if !cfg.Pool.IsValid() {
		cfg.Pool = defaultPool
	}
	if err := checkPool(cfg.Pool); err != nil {
		return cfg, err
	}
	if cfg.StateDir == "" {
		return cfg, errors.New("network: Config.StateDir is required")
	}
	dir, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return cfg, fmt.Errorf("network: state directory: %w", err)
	}
	cfg.StateDir = dir
	if cfg.Table == "" {
		cfg.Table = defaultTable
	}
	if !validTable.MatchString(cfg.Table) {
		return cfg, fmt.Errorf("network: table name %q: want letters, digits and _ only", cfg.Table)
	}
	explicit := len(cfg.Nameservers) > 0
	if cfg.Nameservers == nil {
		ns, err := resolvConfNameservers("/etc/resolv.conf")
		if err != nil {
			return cfg, err
		}
		cfg.Nameservers = ns
	}
	servers := make([]netip.Addr, 0, len(cfg.Nameservers))
	for _, ns := range cfg.Nameservers {
		if !ns.Unmap().Is4() {
			return cfg, fmt.Errorf("network: nameserver %s is not IPv4", ns)
		}
		servers = append(servers, ns.Unmap())
	}
	slices.SortFunc(servers, netip.Addr.Compare)
	cfg.Nameservers = slices.Compact(servers)
	switch {
	case cfg.Resolver != nil:
	case explicit:
		cfg.Resolver = askNameservers(cfg.Nameservers)
	default:
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.ResolveEvery <= 0 {
		cfg.ResolveEvery = 30 * time.Second
	}
	if cfg.ResolveLinger <= 0 {
		cfg.ResolveLinger = 5 * time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return cfg, nil
}

func enableForwarding() error {
	if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644); err != nil {
		return fmt.Errorf("network: enable IPv4 forwarding: %w", err)
	}
	return nil
}

// Attach allocates a /30 from the pool, creates the sandbox's namespace and
// veth pair, configures both ends, installs the sandbox's egress rules
// (with the addresses its policy's names resolve to now), records the
// attachment and returns it. On failure it undoes what it did.
func (m *Manager) Attach(ctx context.Context, id string, p Policy) (Attachment, error) {
	if !validID.MatchString(id) {
		return Attachment{}, fmt.Errorf("network: invalid sandbox ID %q: want %s", id, validID)
	}
	if err := p.check(); err != nil {
		return Attachment{}, err
	}
	resolved := m.merge(p, nil, m.lookup(ctx, p.names()))

	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.attached[id]; ok {
		return Attachment{}, fmt.Errorf("network: sandbox %s is already attached", id)
	}
	addr, gw, err := allocate(m.cfg.Pool, m.attached)
	if err != nil {
		return Attachment{}, err
	}
	a := Attachment{
		ID:       id,
		Netns:    m.netns(id),
		HostIf:   hostIfName(m.cfg.Table, id),
		Addr:     addr,
		Gateway:  gw,
		Policy:   p,
		Resolved: resolved,
	}
	if _, err := os.Lstat(a.Netns); err == nil {
		return Attachment{}, fmt.Errorf("network: attach %s: namespace %s already exists; Detach removes it", id, a.Netns)
	}
	if err := m.attach(ctx, a); err != nil {
		undo := m.detach(context.WithoutCancel(ctx), id)
		return Attachment{}, errors.Join(fmt.Errorf("network: attach %s: %w", id, err), undo)
	}
	return a, nil
}

func (m *Manager) attach(ctx context.Context, a Attachment) error {
	if err := createLinks(a); err != nil {
		return err
	}
	if err := prepare(a); err != nil {
		return err
	}
	m.attached[a.ID] = a
	if err := m.addRules(ctx, a); err != nil {
		return err
	}
	return saveRecord(m.cfg.StateDir, a)
}

// Prepare (re)puts the sandbox's address and default route in its namespace
// and brings eth0 and lo up. runsc takes the interface over and removes its
// address from the namespace, so call Prepare before every `runsc run` and
// `runsc restore`. It is idempotent.
func (m *Manager) Prepare(a Attachment) error {
	if err := prepare(a); err != nil {
		return fmt.Errorf("network: prepare %s: %w", a.ID, err)
	}
	return nil
}

// Detach removes the sandbox's rules, veth, namespace and record, which
// returns its address to the pool. What is already gone is fine, so Detach
// also removes a namespace that List reported without a record.
func (m *Manager) Detach(ctx context.Context, id string) error {
	if !validID.MatchString(id) {
		return fmt.Errorf("network: invalid sandbox ID %q: want %s", id, validID)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.detach(ctx, id); err != nil {
		return fmt.Errorf("network: detach %s: %w", id, err)
	}
	return nil
}

func (m *Manager) detach(ctx context.Context, id string) error {
	var errs []error
	hostIf := hostIfName(m.cfg.Table, id)
	if a, ok := m.attached[id]; ok {
		hostIf = a.HostIf
		delete(m.attached, id)
		errs = append(errs, m.syncRules(ctx))
	}
	errs = append(errs,
		removeVeth(hostIf),
		removeNetns(m.netns(id)),
		removeRecord(m.cfg.StateDir, id))
	return errors.Join(errs...)
}

// List returns every recorded attachment, and, with only ID and Netns set,
// every namespace named <table>-<id> that has no record: a restarted provider
// removes those that no sandbox owns. It is sorted by ID.
func (m *Manager) List() ([]Attachment, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	list := make([]Attachment, 0, len(m.attached))
	for _, a := range m.attached {
		list = append(list, a)
	}
	entries, err := os.ReadDir(netnsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("network: list namespaces: %w", err)
	}
	for _, e := range entries {
		id, ok := strings.CutPrefix(e.Name(), m.cfg.Table+"-")
		if _, recorded := m.attached[id]; ok && !recorded && validID.MatchString(id) {
			list = append(list, Attachment{ID: id, Netns: filepath.Join(netnsDir, e.Name())})
		}
	}
	slices.SortFunc(list, func(a, b Attachment) int { return strings.Compare(a.ID, b.ID) })
	return list, nil
}

// netns is the path of a sandbox's namespace, named after the table so that
// managers with different tables never take each other's for orphans.
func (m *Manager) netns(id string) string { return filepath.Join(netnsDir, m.cfg.Table+"-"+id) }

// SetPolicy replaces an attached sandbox's policy: its set elements are
// swapped in one transaction, at once (the addresses of the new policy's
// names looked up first), and the record rewritten. The policy the
// sandbox has already changes nothing, and looks nothing up.
func (m *Manager) SetPolicy(ctx context.Context, id string, p Policy) error {
	if !validID.MatchString(id) {
		return fmt.Errorf("network: invalid sandbox ID %q: want %s", id, validID)
	}
	if err := p.check(); err != nil {
		return err
	}
	if a, ok := m.Get(id); ok && reflect.DeepEqual(a.Policy, p) {
		return nil
	}
	fresh := m.lookup(ctx, p.names()) // without the lock: lookups wait on the network
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.attached[id]
	if !ok {
		return fmt.Errorf("network: set the policy of %s: it is not attached", id)
	}
	b := a
	b.Policy, b.Resolved = p, m.merge(p, a.Resolved, fresh)
	if err := m.replace(ctx, a, b); err != nil {
		return fmt.Errorf("network: set the policy of %s: %w", id, err)
	}
	return nil
}

// replace turns attachment a into b: its set elements in the table (one
// transaction, or the whole table again should that fail), m's map and
// its record. m.mu is held.
func (m *Manager) replace(ctx context.Context, a, b Attachment) error {
	if reflect.DeepEqual(a, b) {
		return nil
	}
	m.attached[b.ID] = b
	if script := m.change(elements(a), elements(b)); script != "" {
		if err := m.nft(ctx, script); err != nil {
			if err := m.syncRules(ctx); err != nil {
				m.attached[a.ID] = a
				return err
			}
		}
	}
	return saveRecord(m.cfg.StateDir, b)
}

// Get returns the recorded attachment of a sandbox.
func (m *Manager) Get(id string) (Attachment, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.attached[id]
	return a, ok
}

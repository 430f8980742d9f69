// Package server wires sbx serve together: the data directory, the ledger,
// first-start bootstrap, the providers, reconciliation, the reaper and the
// HTTP server, with graceful shutdown.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/docker"
	"github.com/sbxdev/sbx/e2b"
	"github.com/sbxdev/sbx/events"
	"github.com/sbxdev/sbx/httpapi"
	"github.com/sbxdev/sbx/internal/hostserve"
	"github.com/sbxdev/sbx/internal/seal"
	"github.com/sbxdev/sbx/kubernetes"
	"github.com/sbxdev/sbx/ledger"
	"github.com/sbxdev/sbx/lifecycle"
	"github.com/sbxdev/sbx/local"
	"github.com/sbxdev/sbx/local/network"
	"github.com/sbxdev/sbx/opensandbox"
	"github.com/sbxdev/sbx/sshgate"
	"github.com/sbxdev/sbx/ui"
	"github.com/sbxdev/sbx/webhooks"
	"golang.org/x/crypto/ssh"
	"golang.org/x/sys/unix"
)

// Config is everything serve can be told.
type Config struct {
	DataDir         string // default /var/lib/sbx
	DatabaseURL     string // a postgres:// URL; default the SQLite file ledger.db in DataDir
	Listen          string // default 127.0.0.1:7070
	PublicURL       string // default http://<listen>
	Domain          string // default sbx.localhost
	DefaultProvider string // default "local"
	// AlsoProviders are providers run beside the default, which a create
	// may name ("local", "docker").
	AlsoProviders  []string
	MaxTimeout     time.Duration // default 24h
	HibernateAfter time.Duration // idle policy: hibernate sandboxes paused this long; 0 never
	MaxForks       int           // the most children one fork makes; 0: lifecycle's default (16)
	MeterInterval  time.Duration // how often running and paused sandboxes are settled; default 10s
	// EventsRetention is how long org events are kept; 0: events.DefaultRetention.
	EventsRetention time.Duration
	// Webhooks is how webhook deliveries are sent (backoff, attempts, and
	// whether receivers may be at private addresses).
	Webhooks       webhooks.DispatchConfig
	InitialCredits int64             // micro-credits the org made at first start gets; default DefaultInitialCredits
	Local          LocalConfig       // the local gVisor provider, set up when it is the default provider
	Docker         DockerConfig      // the docker provider, set up when it runs
	E2B            E2BConfig         // the e2b provider, set up when it runs
	Kubernetes     KubernetesConfig  // the kubernetes provider, set up when it runs
	OpenSandbox    OpenSandboxConfig // the opensandbox provider, set up when it runs
	// DenyEgress makes none the egress policy of a sandbox whose create,
	// runtime and template name none, and, unless EgressModes says
	// otherwise, the only mode a sandbox may have.
	DenyEgress bool
	// EgressModes are the egress modes a sandbox may have, whoever names
	// its policy; nil: every mode (none only, with DenyEgress).
	EgressModes []sbx.EgressMode
	Providers   []sbx.Provider
	Clock       sbx.Clock
	Log         *slog.Logger
	Out         io.Writer // where the first-start admin key is printed, if it is a terminal (else only where it is written)

	// KYCOff is serve --kyc off: creating sandboxes needs no verified org or user.
	KYCOff bool
	// UIOff is serve --ui off: no web console at /.
	UIOff bool
	// KYCWebhookSecret signs the KYC webhook's requests; empty: the webhook is off.
	KYCWebhookSecret string

	// TLSCert and TLSKey, both set, make serve speak HTTPS with this
	// certificate (PEM files; a wildcard for *.Domain serves previews),
	// read again when they change on disk.
	TLSCert, TLSKey string
	// NoVNCDir holds noVNC's files for sandboxes' desktop viewers; empty:
	// none.
	NoVNCDir string

	// SealKeyFile is a 32-byte key the operator keeps, which seals secrets
	// and access tokens at rest; empty: <DataDir>/seal.key, made at first start.
	SealKeyFile string

	// SSHListen is the SSH gateway's address; empty: no gateway (the CLI's
	// default is DefaultSSHListen, "off" none).
	SSHListen string
	// SSHPublicAddr is the HOST:PORT clients reach the gateway at, which the
	// API's SSH answers name; default the host SSHListen names (that of
	// PublicURL when it listens on every address) and the port it listens on.
	SSHPublicAddr string

	// MetricsListen, when set, is an address serving the Prometheus metrics
	// at /metrics without authentication (the API listener serves them to
	// the operator's key either way).
	MetricsListen string

	// Started, when set, is called with the listening address once the API serves.
	Started func(addr string)
}

// KeyFile is the name, inside the data directory, of the admin API key file.
const KeyFile = hostserve.KeyFile

// DefaultDataDir is where serve keeps its state when not told otherwise.
const DefaultDataDir = hostserve.DataDir

// DefaultName is the instance name of a serve not told otherwise: its
// nftables table, the prefix of its network namespaces, its cgroup parent.
const DefaultName = "sbx"

// DefaultListen is the API's default address.
const DefaultListen = hostserve.Listen

// DefaultSSHListen is the SSH gateway's default address.
const DefaultSSHListen = "127.0.0.1:2222"

// DefaultInitialCredits is the balance of the org made at first start: a
// million credits, so that a fresh install runs without a top-up.
const DefaultInitialCredits = 1_000_000 * 1_000_000

// loopsLock is the advisory lock that makes one of the serve processes
// sharing a database run the meter and the reaper.
const loopsLock = 0x5b8_0002

// sealKey loads the operator's key file, or the data dir's seal.key,
// making that one at first start.
func sealKey(cfg Config) ([]byte, error) {
	if cfg.SealKeyFile != "" {
		return seal.LoadKey(cfg.SealKeyFile)
	}
	return seal.LoadOrCreateKey(filepath.Join(cfg.DataDir, "seal.key"))
}

// Run serves until ctx ends, then shuts down gracefully.
func Run(ctx context.Context, cfg Config) error {
	cfg = withDefaults(cfg)
	log := cfg.Log
	if err := network.CheckName(cfg.Local.Name); err != nil {
		return fmt.Errorf("--name: %w", err)
	}
	for _, name := range cfg.AlsoProviders {
		if name != local.Name && name != docker.Name && name != e2b.Name && name != opensandbox.Name && name != kubernetes.Name {
			return fmt.Errorf("--also-provider: %q is not a provider sbx runs beside another: local, docker, e2b, opensandbox or kubernetes", name)
		}
	}
	egress, err := egressConfig(cfg)
	if err != nil {
		return err
	}
	var certs *certFiles
	if cfg.TLSCert != "" || cfg.TLSKey != "" {
		if certs, err = newCertFiles(cfg.TLSCert, cfg.TLSKey); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	key, err := sealKey(cfg)
	if err != nil {
		return err
	}
	dsn := filepath.Join(cfg.DataDir, "ledger.db")
	if cfg.DatabaseURL != "" {
		if !ledger.IsPostgres(cfg.DatabaseURL) {
			return fmt.Errorf("--database-url %q: want a postgres:// or postgresql:// URL", cfg.DatabaseURL)
		}
		dsn = cfg.DatabaseURL
	}
	store, err := ledger.Open(ctx, dsn, key)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := bootstrap(ctx, store, cfg); err != nil {
		return err
	}
	flushTraces, err := startTraces(ctx, log)
	if err != nil {
		return err
	}
	defer flushTraces()

	providers, engines := cfg.Providers, []apiv1.EngineStatus{}
	var missingLocal string
	runs := func(name string) bool { return name == cfg.DefaultProvider || slices.Contains(cfg.AlsoProviders, name) }
	if runs(local.Name) {
		p, st, err := startLocal(ctx, cfg, log)
		if err != nil {
			return err
		}
		engines = append(engines, st)
		if p != nil {
			providers = append(providers, p)
		} else {
			log.Warn(st.Name+" not usable; sandboxes cannot run here", "detail", st.Detail)
			missingLocal = st.Name + " is not usable: " + st.Detail
		}
	}
	if runs(docker.Name) {
		p, err := startDocker(ctx, cfg, log)
		if err != nil {
			return err
		}
		providers = append(providers, p)
	}
	if runs(e2b.Name) {
		p, err := startE2B(ctx, cfg, log)
		if err != nil {
			return err
		}
		providers = append(providers, p)
	}
	if runs(opensandbox.Name) {
		p, err := startOpenSandbox(ctx, cfg, log)
		if err != nil {
			return err
		}
		providers = append(providers, p)
	}
	if runs(kubernetes.Name) {
		p, err := startKubernetes(ctx, cfg, log)
		if err != nil {
			return err
		}
		providers = append(providers, p)
	}
	mgr := lifecycle.New(store, providers, lifecycle.Config{DefaultProvider: cfg.DefaultProvider, MaxTimeout: cfg.MaxTimeout,
		HibernateAfter: cfg.HibernateAfter, RequireKYC: !cfg.KYCOff, Egress: egress, MaxForks: cfg.MaxForks,
		Limits: lifecycle.Limits{DefaultDiskMB: cfg.Local.DiskMB, MaxDiskMB: cfg.Local.MaxDiskMB}}, cfg.Clock, log)
	if missingLocal != "" {
		mgr.MarkMissing(local.Name, missingLocal)
	}
	store.Hold(ctx, mgr.Owner()) // before any operation: a replica's reconcile leaves this serve's alone
	if err := mgr.Reconcile(ctx); err != nil {
		log.Error("reconcile at start was incomplete; the sandboxes of that provider stay as the ledger has them", "err", err)
	}

	metrics := metricsHandler(cfg, store, mgr, providers, log)
	if cfg.MetricsListen != "" {
		stopMetrics, err := serveMetrics(cfg, metrics, log)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	scheme := "http://"
	if certs != nil {
		ln = tls.NewListener(ln, &tls.Config{GetCertificate: certs.get, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}})
		scheme = "https://"
	}
	if cfg.PublicURL == "" {
		cfg.PublicURL = scheme + ln.Addr().String()
	}
	gate, sshLn, sshEndpoint, err := startSSH(cfg, mgr, store)
	if err != nil {
		ln.Close()
		return err
	}
	var console http.Handler
	if !cfg.UIOff {
		console = ui.Handler()
	}
	api := httpapi.New(mgr, store, httpapi.Config{PublicURL: cfg.PublicURL, Domain: cfg.Domain, HostMemoryMB: hostMemoryMB(),
		Engines: engines, KYCWebhookSecret: cfg.KYCWebhookSecret, WebhookPrivate: cfg.Webhooks.Private, SSH: sshEndpoint, UI: console, NoVNCDir: cfg.NoVNCDir, Metrics: metrics}, cfg.Clock, log)
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}

	background := lifecycle.NewLoops(mgr, store) // the meter, the reaper and the pools' refill, while this serve leads
	dispatcher := webhooks.NewDispatcher(store, cfg.Webhooks, cfg.Clock, log)
	loops, stopLoops := context.WithCancel(context.Background())
	led, watched := make(chan struct{}), make(chan struct{})
	go func() {
		store.Lead(loops, loopsLock, 2*time.Second, func(ctx context.Context) {
			log.Info("running the meter, the reaper and the warm pools' refill")
			log.Info("settling the operations of serves that are gone")
			log.Info("running the webhooks' dispatcher and the events' retention")
			var wg sync.WaitGroup
			wg.Go(func() { background.RunReaper(ctx) })
			wg.Go(func() { background.RunMeter(ctx, cfg.MeterInterval) })
			wg.Go(func() { background.RunPools(ctx, 10*time.Second) })
			wg.Go(func() { background.RunStranded(ctx, 10*time.Second) })
			wg.Go(func() { dispatcher.Run(ctx) })
			wg.Go(func() { events.RunRetention(ctx, store, cfg.EventsRetention, cfg.Clock, log) })
			wg.Wait()
		})
		close(led)
	}()
	go func() { mgr.RunWatchers(loops); close(watched) }()

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if gate != nil {
		go func() {
			if err := gate.Serve(sshLn); err != nil && !errors.Is(err, sshgate.ErrClosed) {
				log.Error("the SSH gateway stopped", "err", err)
			}
		}()
		log.Info("ssh gateway serving", "addr", sshLn.Addr().String(), "host_key", ssh.FingerprintSHA256(gate.HostKey()))
	}
	log.Info("sbx serving", "addr", ln.Addr().String(), "data_dir", cfg.DataDir, "provider", cfg.DefaultProvider)
	if cfg.Started != nil {
		cfg.Started(ln.Addr().String())
	}

	select {
	case err = <-served:
	case <-ctx.Done():
		log.Info("shutting down")
		shut, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		err = srv.Shutdown(shut)
		if werr := mgr.Wait(shut); werr != nil {
			log.Warn("creates still in flight at shutdown; the next start reconciles them", "err", werr)
		}
		cancel()
	}
	if gate != nil {
		gate.Close()
	}
	stopLoops()
	<-led
	<-watched
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// startSSH listens for the SSH gateway, with its host key from the data
// dir (made at first start), unless cfg names no address; it answers the
// gateway, its listener and where clients reach it.
func startSSH(cfg Config, mgr *lifecycle.Manager, store *ledger.Store) (*sshgate.Gateway, net.Listener, httpapi.SSHEndpoint, error) {
	if cfg.SSHListen == "" {
		return nil, nil, httpapi.SSHEndpoint{}, nil
	}
	key, err := sshgate.LoadHostKey(filepath.Join(cfg.DataDir, sshgate.HostKeyFile))
	if err != nil {
		return nil, nil, httpapi.SSHEndpoint{}, err
	}
	ln, err := net.Listen("tcp", cfg.SSHListen)
	if err != nil {
		return nil, nil, httpapi.SSHEndpoint{}, fmt.Errorf("--ssh-listen: %w (another address, or off, turns it off)", err)
	}
	host, port, err := sshPublicAddr(cfg, ln.Addr().(*net.TCPAddr))
	if err != nil {
		ln.Close()
		return nil, nil, httpapi.SSHEndpoint{}, err
	}
	gate := sshgate.New(mgr, store, sshgate.Config{HostKey: key, Clock: cfg.Clock, Log: cfg.Log})
	return gate, ln, httpapi.SSHEndpoint{Host: host, Port: port, KnownHosts: sshgate.KnownHostsLine(host, port, key.PublicKey())}, nil
}

// sshPublicAddr is where clients reach the gateway listening at addr:
// --ssh-public-addr, else the listening host (the public URL's when it
// listens on every address) and port.
func sshPublicAddr(cfg Config, addr *net.TCPAddr) (string, int, error) {
	if cfg.SSHPublicAddr != "" {
		host, p, err := net.SplitHostPort(cfg.SSHPublicAddr)
		port, perr := strconv.Atoi(p)
		if err != nil || perr != nil || host == "" || port < 1 || port > 65535 {
			return "", 0, fmt.Errorf("--ssh-public-addr %q: want HOST:PORT", cfg.SSHPublicAddr)
		}
		return host, port, nil
	}
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		u, err := url.Parse(cfg.PublicURL)
		if err != nil || u.Hostname() == "" {
			return "", 0, fmt.Errorf("--public-url %q: want a URL with a host, which SSH clients reach the gateway at too (or set --ssh-public-addr)", cfg.PublicURL)
		}
		host = u.Hostname()
	}
	return host, addr.Port, nil
}

// egressConfig is the operator's word on egress: --deny-egress makes none
// the default (and, without --egress-modes, the only mode); a default the
// modes do not allow is refused, since every create that names no policy
// would be.
func egressConfig(cfg Config) (lifecycle.EgressConfig, error) {
	e := lifecycle.EgressConfig{Default: sbx.EgressInternetPolicy, Modes: cfg.EgressModes}
	if cfg.DenyEgress {
		e.Default = sbx.Egress{Mode: sbx.EgressNone}
		if e.Modes == nil {
			e.Modes = []sbx.EgressMode{sbx.EgressNone}
		}
	}
	for _, m := range e.Modes {
		if !m.Valid() {
			return e, fmt.Errorf("--egress-modes: %q is not an egress mode (internet, none or allow)", m)
		}
	}
	if e.Modes != nil && !slices.Contains(e.Modes, e.Default.Mode) {
		return e, fmt.Errorf("--egress-modes does not allow the default egress policy, %s: allow it, or make none the default with --deny-egress", e.Default.Mode)
	}
	return e, nil
}

func withDefaults(cfg Config) Config {
	if cfg.DataDir == "" {
		cfg.DataDir = DefaultDataDir
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.Local.Name == "" {
		cfg.Local.Name = DefaultName
	}
	if cfg.Domain == "" {
		cfg.Domain = "sbx.localhost"
	}
	if cfg.DefaultProvider == "" {
		cfg.DefaultProvider = "local"
	}
	if cfg.Clock == nil {
		cfg.Clock = sbx.SystemClock{}
	}
	if cfg.EventsRetention <= 0 {
		cfg.EventsRetention = events.DefaultRetention
	}
	if cfg.MeterInterval == 0 {
		cfg.MeterInterval = lifecycle.DefaultMeterInterval
	}
	if cfg.InitialCredits == 0 {
		cfg.InitialCredits = DefaultInitialCredits
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if cfg.Out == nil {
		cfg.Out = os.Stdout
	}
	return cfg
}

// bootstrap creates, on first start, the default org (verified, so that a
// fresh install creates sandboxes with the KYC gate on), its workspace and
// project and an admin API key, the operator's, in one transaction; it
// prints the key once and writes it to a file only its owner can read.
func bootstrap(ctx context.Context, store *ledger.Store, cfg Config) error {
	n, err := store.CountOrgs(ctx)
	if err != nil || n > 0 {
		return err
	}
	now := cfg.Clock.Now()
	made, err := store.CreateOrgWith(ctx, ledger.NewOrg{Name: "default", KYCStatus: sbx.KYCVerified,
		Credits: cfg.InitialCredits, Key: sbx.APIKey{Name: "admin", Operator: true}}, now)
	if sbx.ErrorCode(err) == sbx.EConflict {
		return nil // another serve sharing the database made it first
	}
	if err != nil {
		return err
	}
	secret := made.Secret
	path := filepath.Join(cfg.DataDir, KeyFile)
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return fmt.Errorf("writing the admin key: %w", err)
	}
	if isTerminal(cfg.Out) {
		fmt.Fprintf(cfg.Out, "Created org \"default\" with an admin API key (shown once; also in %s):\n\n    %s\n\n", path, secret)
	} else { // a log, a pipe, a service's journal: the key stays in its file
		fmt.Fprintf(cfg.Out, "Created org \"default\" with an admin API key, written to %s (readable by its owner only); it is printed only to a terminal.\n", path)
	}
	cfg.Log.Info("first start: created the default org and admin key", "key_file", path)
	return nil
}

// isTerminal reports whether w is a terminal, where the first-start key may
// be shown: anything else may be a log that keeps it.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// hostMemoryMB reads the host's memory from /proc/meminfo; 0 when unknown.
func hostMemoryMB() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	var kb int64
	if _, err := fmt.Sscanf(string(data), "MemTotal: %d kB", &kb); err != nil {
		return 0
	}
	return kb / 1024
}

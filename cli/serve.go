package cli

import (
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/events"
	"github.com/sbxdev/sbx/kubernetes"
	"github.com/sbxdev/sbx/lifecycle"
	"github.com/sbxdev/sbx/local"
	"github.com/sbxdev/sbx/oci"
	"github.com/sbxdev/sbx/pricing"
	"github.com/sbxdev/sbx/server"
	"github.com/sbxdev/sbx/webhooks"
	"github.com/spf13/cobra"
)

func newServe(g *globals) *cobra.Command {
	cfg := server.Config{}
	var logLevel, initialCredits string
	envKYC := (kycValue{&cfg.KYCOff}).Set(env("SBX_KYC", "on")) // checked when --kyc does not replace it
	envUI := (kycValue{&cfg.UIOff}).Set(env("SBX_UI", "on"))    // checked when --ui does not replace it
	// $SBX_POOL is checked when --pool does not replace it.
	var envPool, envModes error
	if v := os.Getenv("SBX_POOL"); v != "" {
		envPool = prefixValue{&cfg.Local.Pool}.Set(v)
	}
	var envNameservers error
	if v := os.Getenv("SBX_NAMESERVERS"); v != "" {
		envNameservers = addrsValue{&cfg.Local.Nameservers}.Set(v)
	}
	if v := os.Getenv("SBX_EGRESS_MODES"); v != "" {
		envModes = egressModesValue{&cfg.EgressModes}.Set(v)
	}
	var envRegistries error
	if v := os.Getenv("SBX_PRIVATE_REGISTRIES"); v != "" {
		envRegistries = registriesValue{&cfg.Local.PrivateRegistries}.Set(v)
	}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the sbx control plane: REST API, ledger, meter, reaper",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if envKYC != nil && !cmd.Flags().Changed("kyc") {
				return usagef("$SBX_KYC=%v", envKYC)
			}
			if envUI != nil && !cmd.Flags().Changed("ui") {
				return usagef("$SBX_UI=%v", envUI)
			}
			if envPool != nil && !cmd.Flags().Changed("pool") {
				return usagef("$SBX_POOL: %v", envPool)
			}
			if envNameservers != nil && !cmd.Flags().Changed("nameservers") {
				return usagef("$SBX_NAMESERVERS: %v", envNameservers)
			}
			if envModes != nil && !cmd.Flags().Changed("egress-modes") {
				return usagef("$SBX_EGRESS_MODES: %v", envModes)
			}
			if envRegistries != nil && !cmd.Flags().Changed("private-registries") {
				return usagef("$SBX_PRIVATE_REGISTRIES: %v", envRegistries)
			}
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return err
			}
			if cfg.MeterInterval <= 0 {
				return fmt.Errorf("--meter-interval %s: want a positive duration", cfg.MeterInterval)
			}
			if cfg.EventsRetention <= 0 {
				return fmt.Errorf("--events-retention %s: want a positive duration", cfg.EventsRetention)
			}
			if cfg.Webhooks.Backoff <= 0 || cfg.Webhooks.Attempts <= 0 {
				return fmt.Errorf("--webhook-backoff %s, --webhook-attempts %d: want a positive duration and number", cfg.Webhooks.Backoff, cfg.Webhooks.Attempts)
			}
			micros, err := pricing.ParseMicros(initialCredits)
			if err != nil || micros == 0 {
				return fmt.Errorf("--initial-credits %q: want a positive number of credits with at most 6 decimals", initialCredits)
			}
			cfg.InitialCredits = micros
			if cfg.SSHListen == "off" {
				cfg.SSHListen = ""
			}
			cfg.Log = slog.New(slog.NewJSONHandler(g.opts.Stderr, &slog.HandlerOptions{Level: level}))
			cfg.Out = g.opts.Stdout
			cfg.Providers = g.opts.Providers
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return server.Run(ctx, cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.DataDir, "data-dir", env("SBX_DATA_DIR", server.DefaultDataDir), "where the ledger and keys live ($SBX_DATA_DIR)")
	f.StringVar(&cfg.DatabaseURL, "database-url", os.Getenv("SBX_DATABASE_URL"), "PostgreSQL ledger, postgres://… (default: SQLite in the data dir); serve processes sharing one need the same seal.key in their data dirs ($SBX_DATABASE_URL)")
	f.StringVar(&cfg.SealKeyFile, "seal-key-file", os.Getenv("SBX_SEAL_KEY_FILE"), "a file of 32 random bytes that seals secrets and access tokens at rest, kept by the operator (default <data-dir>/seal.key, made at first start) ($SBX_SEAL_KEY_FILE)")
	f.StringVar(&cfg.Listen, "listen", env("SBX_LISTEN", server.DefaultListen), "address of the API ($SBX_LISTEN)")
	f.StringVar(&cfg.SSHListen, "ssh-listen", env("SBX_SSH_LISTEN", server.DefaultSSHListen), "address of the SSH gateway (ssh -p PORT SANDBOX_ID@HOST), or off ($SBX_SSH_LISTEN)")
	f.StringVar(&cfg.MetricsListen, "metrics-listen", os.Getenv("SBX_METRICS_LISTEN"), "address serving the Prometheus metrics at /metrics without authentication, for a scraper on the operator's network (default: none; the API serves them to the operator's key) ($SBX_METRICS_LISTEN)")
	f.StringVar(&cfg.SSHPublicAddr, "ssh-public-addr", os.Getenv("SBX_SSH_PUBLIC_ADDR"), "HOST:PORT SSH clients reach the gateway at, as sbx sandbox ssh names it (default: the --ssh-listen host, the --public-url host when it listens on every address, and its port) ($SBX_SSH_PUBLIC_ADDR)")
	f.StringVar(&cfg.PublicURL, "public-url", os.Getenv("SBX_PUBLIC_URL"), "URL clients use to reach this server (default http://<listen>) ($SBX_PUBLIC_URL)")
	f.StringVar(&cfg.Domain, "domain", env("SBX_DOMAIN", "sbx.localhost"), "domain of preview and runtime URLs, {port}-{sandboxID}.<domain>: point a wildcard DNS name at this server ($SBX_DOMAIN)")
	f.StringVar(&cfg.NoVNCDir, "novnc-dir", "/usr/share/novnc", "noVNC's files (Debian's novnc), which sandboxes' desktop viewers load from serve; empty: no viewer")
	f.StringVar(&cfg.TLSCert, "tls-cert", os.Getenv("SBX_TLS_CERT"), "serve HTTPS with this PEM certificate (with --tls-key; for previews, one valid for *.<domain> too), read again when it changes ($SBX_TLS_CERT)")
	f.StringVar(&cfg.TLSKey, "tls-key", os.Getenv("SBX_TLS_KEY"), "the PEM private key of --tls-cert ($SBX_TLS_KEY)")
	f.StringVar(&cfg.DefaultProvider, "provider", env("SBX_PROVIDER", defaultProvider()), "the default provider of new sandboxes: local (gVisor on this host), docker (a Docker daemon, --docker-host), e2b (an E2B API, --e2b-api-url), opensandbox (an OpenSandbox server, --opensandbox-url) or kubernetes (pods of a cluster, --k8s-…; the default in a cluster's pod) ($SBX_PROVIDER)")
	f.StringSliceVar(&cfg.AlsoProviders, "also-provider", nil, "providers to run beside --provider, which a create may name (\"provider\"), separated by commas: local, docker, e2b, opensandbox, kubernetes")
	k := &cfg.Kubernetes
	f.StringVar(&k.Kubeconfig, "k8s-kubeconfig", env("SBX_K8S_KUBECONFIG", os.Getenv("KUBECONFIG")), "the kubeconfig of the kubernetes provider's cluster (default: the pod's in-cluster credentials) ($SBX_K8S_KUBECONFIG, $KUBECONFIG)")
	f.StringVar(&k.Namespace, "k8s-namespace", env("SBX_K8S_NAMESPACE", kubernetes.DefaultNamespace), "the namespace of kubernetes sandboxes' pods and claims ($SBX_K8S_NAMESPACE)")
	f.StringVar(&k.AgentImage, "k8s-agent-image", os.Getenv("SBX_K8S_AGENT_IMAGE"), "the sbx-agent image `sbx kubernetes images` made, which every kubernetes sandbox mounts its agent from ($SBX_K8S_AGENT_IMAGE)")
	f.StringVar(&k.RuntimeClass, "k8s-runtime-class", env("SBX_K8S_RUNTIME_CLASS", kubernetes.DefaultRuntimeClass), "the RuntimeClass of kubernetes sandboxes' pods ($SBX_K8S_RUNTIME_CLASS)")
	f.StringVar(&k.Reach, "k8s-reach", env("SBX_K8S_REACH", kubernetes.ReachPodIP), "how serve reaches kubernetes sandboxes: pod-ip (serve routes to pods: in the cluster) or apiserver (every connection through the API server's pods/exec) ($SBX_K8S_REACH)")
	f.StringVar(&k.StorageClass, "k8s-storage-class", os.Getenv("SBX_K8S_STORAGE_CLASS"), "the StorageClass of kubernetes sandboxes' working directories, which a pause keeps (default: the cluster's default class) ($SBX_K8S_STORAGE_CLASS)")
	f.StringVar(&k.ImagePrefix, "k8s-image-prefix", os.Getenv("SBX_K8S_IMAGE_PREFIX"), "the registry path before sbx-template/NAME:VERSION, where the operator pushed the images `sbx template export` made ($SBX_K8S_IMAGE_PREFIX)")
	f.StringVar(&k.PriorityClass, "k8s-priority-class", os.Getenv("SBX_K8S_PRIORITY_CLASS"), "the PriorityClass of kubernetes sandboxes' pods ($SBX_K8S_PRIORITY_CLASS)")
	f.StringToStringVar(&k.NodeSelector, "k8s-node-selector", nil, "labels (KEY=VALUE,…) a node must have to run kubernetes sandboxes")
	f.Int64Var(&k.CPURequestPercent, "k8s-cpu-request-percent", kubernetes.DefaultCPURequestPercent, "the share of a kubernetes sandbox's CPU limit its pod requests of the scheduler (CPU is overcommitted; memory is requested as limited)")
	f.DurationVar(&k.StartTimeout, "k8s-start-timeout", kubernetes.DefaultStartTimeout, "how long a kubernetes sandbox's pod may stay pending before its create fails, naming why")
	f.StringVar(&cfg.Docker.Host, "docker-host", env("SBX_DOCKER_HOST", "unix:///var/run/docker.sock"), "the Docker daemon of --provider docker: unix:///path/to/docker.sock or tcp://host:port ($SBX_DOCKER_HOST)")
	f.StringVar(&cfg.Docker.Runtime, "docker-runtime", os.Getenv("SBX_DOCKER_RUNTIME"), "the OCI runtime the Docker daemon runs docker sandboxes with, e.g. runsc where gVisor is registered with it (default: the daemon's) ($SBX_DOCKER_RUNTIME)")
	f.StringVar(&cfg.E2B.APIURL, "e2b-api-url", env("SBX_E2B_API_URL", "https://api.e2b.app"), "the E2B API of the e2b provider: E2B's, or any server of that API (another sbx's /e2b) ($SBX_E2B_API_URL)")
	f.StringVar(&cfg.E2B.Domain, "e2b-domain", env("SBX_E2B_DOMAIN", "e2b.app"), "the domain of e2b sandboxes, whose envd is https://49983-<id>.<domain>, when the API's answer names none ($SBX_E2B_DOMAIN)")
	f.StringVar(&cfg.E2B.SandboxURL, "e2b-sandbox-url", os.Getenv("SBX_E2B_SANDBOX_URL"), "reach every e2b sandbox's envd at this URL with headers naming it (E2B's E2B_SANDBOX_URL) instead of at its domain ($SBX_E2B_SANDBOX_URL)")
	f.StringVar(&cfg.E2B.APIKeyFile, "e2b-api-key-file", os.Getenv("SBX_E2B_API_KEY_FILE"), "a file holding the E2B API key, when $E2B_API_KEY is not set ($SBX_E2B_API_KEY_FILE)")
	f.DurationVar(&cfg.E2B.Lease, "e2b-lease", 10*time.Minute, "an e2b sandbox's E2B timeout, renewed while serve runs: a serve that stops leaves no e2b compute behind for longer")
	cfg.E2B.APIKey = os.Getenv("E2B_API_KEY")
	f.StringVar(&cfg.OpenSandbox.URL, "opensandbox-url", os.Getenv("SBX_OPENSANDBOX_URL"), "the OpenSandbox server of the opensandbox provider, as its SDKs' domain: http(s)://host[:port][/prefix] (another sbx's is <serve>/opensandbox); its API key in $OPEN_SANDBOX_API_KEY ($SBX_OPENSANDBOX_URL)")
	f.StringVar(&cfg.OpenSandbox.APIKeyFile, "opensandbox-api-key-file", os.Getenv("SBX_OPENSANDBOX_API_KEY_FILE"), "a file holding the OpenSandbox API key, when $OPEN_SANDBOX_API_KEY is not set ($SBX_OPENSANDBOX_API_KEY_FILE)")
	f.DurationVar(&cfg.OpenSandbox.Lease, "opensandbox-lease", 10*time.Minute, "an opensandbox sandbox's expiration, renewed while serve runs")
	cfg.OpenSandbox.APIKey = os.Getenv("OPEN_SANDBOX_API_KEY")
	f.StringVar(&cfg.Local.Engine, "engine", env("SBX_ENGINE", "runsc"), "what runs local sandboxes: runsc (gVisor) or runc (trusted work: no hibernation, GPUs or disk cap) ($SBX_ENGINE)")
	f.StringVar(&cfg.Local.Runc, "runc", "", "runc binary, for --engine runc (default runc on PATH)")
	f.StringVar(&cfg.Local.Runsc, "runsc", os.Getenv("SBX_RUNSC"), "gVisor runsc binary (default <data-dir>/bin/runsc, then PATH) ($SBX_RUNSC)")
	f.StringVar(&cfg.Local.TemplatesDir, "templates-dir", os.Getenv("SBX_TEMPLATES_DIR"), "where templates live (default <data-dir>/templates) ($SBX_TEMPLATES_DIR)")
	f.StringVar(&cfg.Local.Name, "name", env("SBX_NAME", server.DefaultName), "this server's name on the host: its nftables table, the prefix of its network namespaces (/run/netns/<name>-<id>) and its cgroup parent; servers sharing a host need names and pools of their own ($SBX_NAME)")
	f.Var(prefixValue{&cfg.Local.Pool}, "pool", "IPv4 prefix sandbox addresses come from, split into /30s; refused at start when it overlaps another server's on this host (default 10.201.0.0/16) ($SBX_POOL)")
	f.BoolVar(&cfg.DenyEgress, "deny-egress", false, "a sandbox whose create, runtime and template name no egress policy reaches nothing, and, without --egress-modes, none may ask for more (default: the internet, but no private or metadata addresses)")
	f.Var(egressModesValue{&cfg.EgressModes}, "egress-modes", "the egress modes a sandbox's policy may have, of internet, none and allow, whoever names it (default: all; none only with --deny-egress) ($SBX_EGRESS_MODES)")
	f.Var(addrsValue{&cfg.Local.Nameservers}, "nameservers", "IPv4 nameservers, separated by commas, that sandboxes may reach on port 53 and that resolve the domain names of egress policies (default: /etc/resolv.conf's; a sandbox's own /etc/resolv.conf comes from its template) ($SBX_NAMESERVERS)")
	f.StringVar(&cfg.Local.GPUs, "gpus", os.Getenv("SBX_GPUS"), "GPU inventory as TYPE:COUNT,… (default: what nvidia-smi finds) ($SBX_GPUS)")
	f.Int64Var(&cfg.Local.DiskMB, "disk-mb", 10<<10, "cap of a sandbox's writable layer, in MB, when its create names none")
	f.Int64Var(&cfg.Local.MaxDiskMB, "max-disk-mb", 0, "the largest writable layer a create may ask for, in MB (default: --disk-mb)")
	cfg.Local.DiskReserve = local.DefaultReserve
	f.Var(reserveValue{&cfg.Local.DiskReserve}, "disk-reserve", "disk the local provider keeps free in the data dir's filesystem, as a size (2GiB) or a share (5%): a create or resume that could leave less, once every live sandbox has written its layer to its cap, is refused (507)")
	f.Var(registriesValue{&cfg.Local.PrivateRegistries}, "private-registries", "registries (HOST or HOST:PORT, separated by commas) whose images tenants may start sandboxes from although they are at private or loopback addresses; any registry at a public address may be used ($SBX_PRIVATE_REGISTRIES)")
	f.Int64Var(&cfg.Local.MaxImageMB, "max-image-mb", 10<<10, "the largest image, in MB of its compressed layers, a create may start a sandbox from (0: no cap)")
	f.DurationVar(&cfg.HibernateAfter, "hibernate-after", 10*time.Minute, "hibernate sandboxes paused this long, releasing their memory (0: never)")
	f.IntVar(&cfg.MaxForks, "max-forks", 16, "the most children one fork makes")
	f.DurationVar(&cfg.MaxTimeout, "max-timeout", 24*time.Hour, "the longest timeout a sandbox may have")
	f.DurationVar(&cfg.EventsRetention, "events-retention", events.DefaultRetention, "how long org events (GET /api/v1/events, webhooks) and ended webhook deliveries are kept")
	f.DurationVar(&cfg.Webhooks.Backoff, "webhook-backoff", webhooks.DefaultBackoff, "the wait before a failed webhook delivery's second attempt, doubled after each (at most 1h)")
	f.IntVar(&cfg.Webhooks.Attempts, "webhook-attempts", webhooks.DefaultAttempts, "attempts of a webhook delivery before it is a dead letter")
	f.BoolVar(&cfg.Webhooks.Private, "webhook-private", false, "let webhook URLs reach private addresses (loopback, the LAN, the host); by default only public ones")
	f.DurationVar(&cfg.MeterInterval, "meter-interval", lifecycle.DefaultMeterInterval, "how often running and paused sandboxes are settled (state changes settle at once)")
	f.StringVar(&initialCredits, "initial-credits", pricing.FormatMicros(server.DefaultInitialCredits), "credits of the org made at first start")
	f.Var(kycValue{&cfg.KYCOff}, "kyc", "the KYC gate: on, creating a sandbox needs a verified org or user; off, for self-hosted installs that verify no one ($SBX_KYC)")
	f.StringVar(&cfg.KYCWebhookSecret, "kyc-webhook-secret", os.Getenv("SBX_KYC_WEBHOOK_SECRET"), "secret shared with an outside KYC service, which signs POST /api/v1/kyc/webhook with it; prefer the environment, where ps cannot read it (default: the webhook is off) ($SBX_KYC_WEBHOOK_SECRET)")
	f.Var(kycValue{&cfg.UIOff}, "ui", "the web console at / (assets under /ui/): on, or off, where / is the API's 404 ($SBX_UI)")
	f.StringVar(&logLevel, "log-level", env("SBX_LOG_LEVEL", "info"), "debug, info, warn or error ($SBX_LOG_LEVEL)")
	return cmd
}

// defaultProvider is the provider of a serve that names none: kubernetes
// in a cluster's pod, else local.
func defaultProvider() string {
	if server.InCluster() {
		return kubernetes.Name
	}
	return local.Name
}

// env returns the environment variable name, or def when it is empty.
func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// prefixValue is a flag holding an IPv4 prefix.
type prefixValue struct{ p *netip.Prefix }

func (v prefixValue) Set(s string) error {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return fmt.Errorf("%q is not a prefix such as 10.201.0.0/16", s)
	}
	*v.p = p
	return nil
}

func (v prefixValue) Type() string { return "PREFIX" }

func (v prefixValue) String() string {
	if !v.p.IsValid() {
		return ""
	}
	return v.p.String()
}

// reserveValue is the --disk-reserve flag.
type reserveValue struct{ r *local.Reserve }

func (v reserveValue) Set(s string) (err error) {
	*v.r, err = local.ParseReserve(s)
	return err
}

func (v reserveValue) Type() string { return "SIZE|PERCENT" }

func (v reserveValue) String() string { return v.r.String() }

// kycValue is an on|off flag (--kyc, --ui), held as whether it is off.
type kycValue struct{ off *bool }

func (v kycValue) Set(s string) error {
	switch s {
	case "on":
		*v.off = false
	case "off":
		*v.off = true
	default:
		return fmt.Errorf("%q: want on or off", s)
	}
	return nil
}

func (v kycValue) Type() string { return "on|off" }

func (v kycValue) String() string {
	if v.off != nil && *v.off {
		return "off"
	}
	return "on"
}

// egressModesValue is the --egress-modes flag: modes separated by commas.
type egressModesValue struct{ modes *[]sbx.EgressMode }

func (v egressModesValue) Set(s string) error {
	modes := []sbx.EgressMode{}
	for _, m := range strings.Split(s, ",") {
		mode := sbx.EgressMode(strings.TrimSpace(m))
		if !mode.Valid() {
			return fmt.Errorf("%q is not an egress mode: want internet, none or allow, separated by commas", m)
		}
		if !slices.Contains(modes, mode) {
			modes = append(modes, mode)
		}
	}
	*v.modes = modes
	return nil
}

func (v egressModesValue) Type() string { return "MODES" }

func (v egressModesValue) String() string {
	var out []string
	for _, m := range *v.modes {
		out = append(out, string(m))
	}
	return strings.Join(out, ",")
}

// addrsValue is a flag holding IPv4 addresses separated by commas.
type addrsValue struct{ addrs *[]netip.Addr }

func (v addrsValue) Set(s string) error {
	var addrs []netip.Addr
	for _, a := range strings.Split(s, ",") {
		addr, err := netip.ParseAddr(strings.TrimSpace(a))
		if err != nil || !addr.Is4() {
			return fmt.Errorf("%q is not an IPv4 address", a)
		}
		addrs = append(addrs, addr)
	}
	*v.addrs = addrs
	return nil
}

func (v addrsValue) Type() string { return "ADDRS" }

func (v addrsValue) String() string {
	var out []string
	for _, a := range *v.addrs {
		out = append(out, a.String())
	}
	return strings.Join(out, ",")
}

// registriesValue is the --private-registries flag.
type registriesValue struct{ r *[]string }

func (v registriesValue) Set(s string) error {
	r, err := oci.ParseRegistries(s)
	if err == nil {
		*v.r = r
	}
	return err
}

func (v registriesValue) Type() string   { return "REGISTRIES" }
func (v registriesValue) String() string { return strings.Join(*v.r, ",") }

package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The metrics the layers record, each through one function below.
var (
	operations = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "lifecycle_operation_duration_seconds",
		Help:    "Lifecycle operations that called a provider (create, pause, hibernate, resume, delete), by verb, provider and outcome (ok, error): from the request to the settled row.",
		Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
	}, []string{"verb", "provider", "outcome"})
	providerCalls = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "provider_call_duration_seconds",
		Help:    "Calls of a provider by the lifecycle, by provider, call and outcome (ok, error).",
		Buckets: []float64{.005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
	}, []string{"provider", "call", "outcome"})
	requests = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "http_request_duration_seconds",
		Help:    "Requests served by the API listener, by route (the route's pattern, or the traffic's kind for proxied hosts) and status class (2xx, 3xx, 4xx, 5xx).",
		Buckets: []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"route", "code"})
	proxyRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "proxy_requests_total",
		Help: "Requests for sandboxes' agents and ports, answered by the sandbox or refused, by kind (agent: the agent API's routes; preview, runtime, ports, e2b, execd).",
	}, []string{"kind"})
	proxyBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "proxy_response_bytes_total",
		Help: "Bytes of the answers proxied from sandboxes to clients over HTTP, by kind (an upgraded connection's bytes are not counted).",
	}, []string{"kind"})
	sshConnections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "ssh_connections_total",
		Help: "Connections to the SSH gateway, by outcome (connected, handshake_failed, busy: too many authenticating at once).",
	}, []string{"outcome"})
	sshChannels = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "ssh_channels_total",
		Help: "Channels SSH clients opened, by type (session, direct-tcpip, other).",
	}, []string{"type"})
	sshBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "ssh_forwarded_bytes_total",
		Help: "Bytes the SSH gateway forwarded to sandboxes' ports, by direction (to_sandbox, to_client).",
	}, []string{"direction"})
	settlements = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "meter_settlements_total",
		Help: "Settlements made by the meter, by kind (sandbox, snapshot, volume) and outcome (ok, error).",
	}, []string{"kind", "outcome"})
	billed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "credits_billed_total",
		Help: "Credits the meter's settlements took from balances, by kind (sandbox, snapshot, volume).",
	}, []string{"kind"})
	reaped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "reaper_actions_total",
		Help: "What the reaper and the meter did to sandboxes, by action (pause_expired, kill_expired, hibernate_idle, pause_unfunded) and outcome (ok, error).",
	}, []string{"action", "outcome"})
	reconciled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "reconcile_actions_total",
		Help: "What reconcile did, at start or settling the operations of a serve that is gone, by action (adopted, finished_kill, lost, dead, restore_interrupted, create_interrupted, resume_interrupted, orphan_killed).",
	}, []string{"action"})

	// recorded are registered in the registry.
	recorded = []prometheus.Collector{operations, providerCalls, requests, proxyRequests, proxyBytes,
		sshConnections, sshChannels, sshBytes, settlements, billed, reaped, reconciled}
)

// Operation records a lifecycle operation that called provider: its verb,
// its outcome (err) and how long it took.
func Operation(verb, provider string, err error, took time.Duration) {
	operations.WithLabelValues(verb, provider, outcome(err)).Observe(took.Seconds())
}

// Request records a request the API listener served: its route (a pattern
// or a kind, never a raw path), its status and how long it took.
func Request(route string, status int, took time.Duration) {
	requests.WithLabelValues(route, statusClass(status)).Observe(took.Seconds())
}

// Proxied records a request proxied to a sandbox and the bytes of its answer.
func Proxied(kind string, bytes int64) {
	proxyRequests.WithLabelValues(kind).Inc()
	proxyBytes.WithLabelValues(kind).Add(float64(bytes))
}

// SSHConnection records a connection to the SSH gateway and its outcome.
func SSHConnection(outcome string) { sshConnections.WithLabelValues(outcome).Inc() }

// SSHChannel records a channel an SSH client opened, by type.
func SSHChannel(kind string) {
	if kind != "session" && kind != "direct-tcpip" {
		kind = "other" // a client names the type: keep the label bounded
	}
	sshChannels.WithLabelValues(kind).Inc()
}

// SSHForwarded records bytes forwarded toward the sandbox (in) or the client.
func SSHForwarded(toSandbox bool, bytes int64) {
	direction := "to_client"
	if toSandbox {
		direction = "to_sandbox"
	}
	sshBytes.WithLabelValues(direction).Add(float64(bytes))
}

// Settled records one of the meter's settlements of kind (sandbox,
// snapshot, volume) and the micro-credits it took from a balance.
func Settled(kind string, paidMicros int64, err error) {
	settlements.WithLabelValues(kind, outcome(err)).Inc()
	if err == nil && paidMicros > 0 {
		billed.WithLabelValues(kind).Add(float64(paidMicros) / 1e6)
	}
}

// Reaped records an action of the reaper or the meter on a sandbox.
func Reaped(action string, err error) { reaped.WithLabelValues(action, outcome(err)).Inc() }

// Reconciled records an action of reconcile at start.
func Reconciled(action string) { reconciled.WithLabelValues(action).Inc() }

func outcome(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}

// statusClasses are the classes of statuses, by their first digit.
var statusClasses = [...]string{"other", "1xx", "2xx", "3xx", "4xx", "5xx"}

// statusClass is a status's class, "2xx" for 200 to 299, without an
// allocation (it is on every request's path).
func statusClass(status int) string {
	if status < 100 || status > 599 {
		return statusClasses[0]
	}
	return statusClasses[status/100]
}

package layering

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Packages are named as docs/ARCHITECTURE.md names them: by their path in
// the module ("local/runsc"), the module's root package "sbx". A pattern
// "local/..." is local and every package under it; "..." every package of
// the module.

// rules are the edges that must hold: a package matching from imports (in
// its non-test files) no package of the module that not names, or, with
// only, none but those it names. Tests may import what they like.
var rules = []rule{
	{from: "sbx", not: []string{"..."}, why: "the domain imports no other package of the module"},
	{from: "apiv1", not: []string{"..."}, why: "the wire format imports no other package of the module"},
	{from: "ui", not: []string{"..."}, why: "the web console is static files that speak the public REST API only"},
	{from: "pricing", only: []string{"sbx"}, why: "prices are computed without state"},
	{from: "oci", only: []string{"sbx"}, why: "reaching registries for tenants is a leaf any provider may use"},
	{from: "telemetry", only: []string{"sbx"}, why: "metrics and traces are a leaf every layer records through; what they read at a scrape comes through their own interfaces"},
	{from: "client", only: []string{"apiv1", "internal/..."}, why: "the public Go client speaks the API only"},
	{from: "ledger", not: []string{"httpapi", "lifecycle", "local/...", "cli", "server", "agent", "client", "capability", "authz", "bench", "template"}, why: "the ledger is the bottom layer: it owns SQL and knows none of its callers"},
	{from: "capability", not: []string{"ledger", "lifecycle", "httpapi", "local/...", "server", "cli"}, why: "capability imports no adapter: the ledger reaches it through capability.Store"},
	{from: "authz", not: []string{"ledger", "lifecycle", "httpapi"}, why: "the policy asks a small Store interface"},
	{from: "lifecycle", not: []string{"httpapi", "local/...", "server", "cli", "client"}, why: "the state machine knows providers by sbx.Provider, and no surface"},
	{from: "httpapi", not: []string{"ledger", "local/...", "server", "cli", "client", "bench", "template"}, why: "the REST API is a surface: it calls the application layer, never the ledger or a provider"},
	{from: "e2bapi", not: []string{"ledger", "local/...", "server", "cli", "client", "bench", "template", "httpapi"}, why: "E2B's API is a surface: it calls the application layer, never the ledger or a provider"},
	{from: "osbapi", not: []string{"ledger", "local/...", "server", "cli", "client", "bench", "template", "httpapi", "e2bapi"}, why: "OpenSandbox's API is a surface: it calls the application layer, never the ledger or a provider"},
	{from: "sshgate", not: []string{"ledger", "local/...", "server", "cli", "client", "bench", "template", "httpapi"}, why: "the SSH gateway is a surface: it calls the application layer, never the ledger or a provider"},
	{from: "agent", not: []string{"ledger", "httpapi", "lifecycle", "local/...", "server", "cli", "client", "capability", "authz", "pricing"}, why: "the agent runs inside a sandbox and knows nothing of the control plane"},
	{from: "local/...", not: []string{"ledger", "lifecycle", "httpapi", "server", "cli", "capability", "authz"}, why: "a provider knows nothing of the control plane above sbx.Provider"},
	{from: "docker/...", not: []string{"ledger", "lifecycle", "httpapi", "server", "cli", "capability", "authz", "local/..."}, why: "a provider knows nothing of the control plane above sbx.Provider, nor of another provider"},
	{from: "agentbridge", only: []string{"apiv1", "internal/pipenet", "internal/strictjson"}, why: "the bridge serves the agent's API over a daemon's client that a provider gives it, and knows nothing else"},
	{from: "e2b", not: []string{"ledger", "lifecycle", "httpapi", "server", "cli", "capability", "authz", "local/...", "docker/...", "e2bapi", "agent"}, why: "a provider knows nothing of the control plane above sbx.Provider, nor of another provider, nor of the server of E2B's API it may face"},
	{from: "opensandbox", not: []string{"ledger", "lifecycle", "httpapi", "server", "cli", "capability", "authz", "local/...", "docker/...", "e2b", "osbapi", "agent"}, why: "a provider knows nothing of the control plane above sbx.Provider, nor of another provider, nor of the server of OpenSandbox's API it may face"},
	{from: "kubernetes", not: []string{"ledger", "lifecycle", "httpapi", "server", "cli", "capability", "authz", "local/...", "docker/...", "e2b", "opensandbox", "agent"}, why: "a provider knows nothing of the control plane above sbx.Provider, nor of another provider, nor of the agent it runs (only its command line)"},
	{from: "mcpserver", only: []string{"apiv1", "client", "internal/..."}, why: "the MCP server is a surface over the public Go client: the API decides and authorizes everything"},
	{from: "cli", not: []string{"ledger", "httpapi", "authz"}, why: "the CLI's verbs go through the API (package client) or, on this host, through serve's wiring"},
	{from: "internal/sbximage", only: []string{}, why: "the images are made of binaries and files it is given: it knows nothing of sbx"},
	{from: "internal/kube", only: []string{}, why: "the Kubernetes API's client knows nothing of sbx"},
	{from: "internal/k8stest", only: []string{"internal/testenv", "internal/testpg", "internal/sbximage"}, why: "the test cluster is scripts/k8s.sh's and kubectl's, its database the tests' PostgreSQL, its agent image packed as sbx packs it: it knows nothing else of sbx"},
}

type rule struct {
	from, why string
	not, only []string
}

// services are the application layer's packages (add a new one here):
// every surface calls them, and they reach the ledger through Store
// interfaces of their own.
var services = []string{"tenancy", "secrets", "sessions", "billing", "observability", "preview", "sshauth", "events", "webhooks"}

func init() {
	for _, s := range services {
		rules = append(rules, rule{from: s, not: []string{"ledger", "httpapi", "cli", "client", "server", "local/..."},
			why: "an application service is called by every surface and calls the ledger through its own Store interface"})
	}
}

// importers are the only packages that may import a package matching to.
var importers = []struct {
	to, why string
	by      []string
}{
	// cli's serve and bench verbs import local too; cliClientVerbs holds
	// the rest of cli to none of it.
	{to: "local/...", by: []string{"local/...", "server", "bench", "cli"}, why: "only the wiring picks a provider"},
	{to: "docker/...", by: []string{"docker/...", "server", "bench", "cli"}, why: "only the wiring picks a provider"},
	{to: "e2b", by: []string{"server", "bench", "cli"}, why: "only the wiring picks a provider"},
	{to: "opensandbox", by: []string{"server", "bench", "cli"}, why: "only the wiring picks a provider"},
	{to: "kubernetes", by: []string{"server", "bench", "cli"}, why: "only the wiring picks a provider"},
	{to: "server", by: []string{"cli", "bench"}, why: "only sbx serve and sbx bench start a server"},
}

// cliHostVerbs are the files of package cli whose verbs work on this host
// (serve, bench, template, the hidden agent): the other files are client
// verbs and import none of cliHostOnly.
var (
	cliHostVerbs = regexp.MustCompile(`^(serve|bench.*|template.*|agent)\.go$`)
	cliHostOnly  = []string{"server", "ledger", "lifecycle", "httpapi", "local/...", "docker/...", "e2b", "opensandbox", "kubernetes", "bench", "template", "agent"}
)

// neverLinked are test support, which the sbx binary must not link.
var neverLinked = []string{"providertest", "internal/testenv", "internal/agenttest", "internal/testpg", "internal/testtemplates", "internal/contract", "internal/testregistry", "internal/k8stest", "docker/dockertest"}

// exception is an edge that breaks a rule today and is being removed.
type exception struct{ from, to, why string }

// exceptions are those edges, one a line, e.g.
//
//	{"httpapi", "ledger", "issue 14: the handlers' ledger calls are moving into the application layer"},
//
// (which 4a6196b removed). The test fails once an edge is gone, so that its
// line goes with it.
var exceptions = []exception{}

type pkg struct {
	ImportPath, Dir string
	GoFiles         []string
	Imports         []string
	Deps            []string
	Module          *struct{ Path string }
}

// list runs go list over the module's packages.
func list(t *testing.T, args ...string) (module string, pkgs []pkg) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	cmd := exec.Command("go", append([]string{"list", "-e", "-json=ImportPath,Dir,GoFiles,Imports,Deps,Module"}, args...)...)
	cmd.Dir = root(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.Bytes())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	// This module, not the first package's: with -deps, the first
	// packages listed are of other modules.
	cmd = exec.Command("go", "list", "-m")
	cmd.Dir = root(t)
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	return strings.TrimSpace(string(out)), pkgs
}

// root is the module's directory.
func root(t *testing.T) string {
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// name is a package's name in the module ("sbx" for its root), or "" for
// one outside it.
func name(module, importPath string) string {
	switch {
	case importPath == module:
		return "sbx"
	case strings.HasPrefix(importPath, module+"/"):
		return strings.TrimPrefix(importPath, module+"/")
	}
	return ""
}

// match reports whether package n matches pattern.
func match(pattern, n string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return n == base || strings.HasPrefix(n, base+"/")
	}
	return n == pattern
}

func matchAny(patterns []string, n string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(p, n) })
}

// violations lists every edge of pkgs that breaks a rule, as "from → to:
// why" (the first rule it breaks), and the exceptions that were needed.
func violations(module string, pkgs []pkg, exceptions []exception) (broken []string, excused map[string]bool) {
	excused = map[string]bool{}
	seen := map[string]bool{}
	report := func(from, to, why string) {
		edge := from + " → " + to
		if seen[edge] {
			return
		}
		seen[edge] = true
		for _, e := range exceptions {
			if e.from == from && e.to == to {
				excused[edge] = true
				return
			}
		}
		broken = append(broken, edge+": "+why)
	}
	for _, p := range pkgs {
		from := name(module, p.ImportPath)
		for _, imp := range p.Imports {
			to := name(module, imp)
			if to == "" || to == from {
				continue
			}
			for _, r := range rules {
				if !match(r.from, from) {
					continue
				}
				if matchAny(r.not, to) || (r.only != nil && !matchAny(r.only, to)) {
					report(from, to, r.why)
				}
			}
			for _, r := range importers {
				if match(r.to, to) && !matchAny(r.by, from) {
					report(from, to, r.why)
				}
			}
		}
	}
	slices.Sort(broken)
	return broken, excused
}

// The module's packages import only across the intended edges.
func TestLayering(t *testing.T) {
	module, pkgs := list(t, "./...")
	broken, excused := violations(module, pkgs, exceptions)
	for _, b := range broken {
		t.Errorf("a package imports across the layering: %s", b)
	}
	for _, e := range exceptions {
		if !excused[e.from+" → "+e.to] {
			t.Errorf("%s no longer imports %s: delete its line from exceptions in internal/layering/layering_test.go", e.from, e.to)
		}
	}
}

// The CLI's client verbs import no part of the server: they speak the API
// through package client, as any other program would.
func TestCLIClientVerbs(t *testing.T) {
	module, pkgs := list(t, "./cli")
	p := pkgs[0]
	for _, f := range p.GoFiles {
		if cliHostVerbs.MatchString(f) {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, f), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range file.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			if to := name(module, imp); to != "" && matchAny(cliHostOnly, to) {
				t.Errorf("cli/%s imports %s: a client verb goes through the API (package client); only the host's verbs (%s) may", f, to, cliHostVerbs)
			}
		}
	}
}

// The sbx binary links no test support.
func TestBinaryLinksNoTestSupport(t *testing.T) {
	module, pkgs := list(t, "-deps", "./cmd/sbx")
	for _, p := range pkgs {
		if n := name(module, p.ImportPath); matchAny(neverLinked, n) {
			t.Errorf("cmd/sbx links %s, which is test support", n)
		}
	}
}

// The agent-only build that every sandbox runs (cmd/sbx-agent) links, of
// this module, the agent and what it stands on alone: each package the
// control plane adds would be mapped and initialised in every idle sandbox.
func TestAgentBuildLinksTheAgentAlone(t *testing.T) {
	allowed := []string{"sbx", "apiv1", "agent", "agent/kernel", "cmd/sbx-agent", "internal/echoserver", "internal/strictjson"}
	module, pkgs := list(t, "-deps", "./cmd/sbx-agent")
	for _, p := range pkgs {
		if n := name(module, p.ImportPath); n != "" && !matchAny(allowed, n) {
			t.Errorf("cmd/sbx-agent links %s", n)
		}
	}
}

// The rules catch an edge: one added to the packages as go list found
// them is reported, naming it and why it breaks the layering.
func TestLayeringCatchesAnEdge(t *testing.T) {
	module := "example.com/m"
	pkgs := []pkg{
		{ImportPath: module, Imports: []string{"fmt", module + "/apiv1"}},
		{ImportPath: module + "/httpapi", Imports: []string{module + "/local/runsc", module + "/ledger", module + "/lifecycle"}},
		{ImportPath: module + "/template", Imports: []string{module + "/local"}},
		{ImportPath: module + "/agent", Imports: []string{module + "/ledger"}},
		{ImportPath: module + "/secrets", Imports: []string{module + "/authz", module + "/ledger"}},
	}
	broken, excused := violations(module, pkgs, []exception{{"agent", "ledger", "a test"}})
	want := []string{
		"httpapi → ledger: the REST API is a surface: it calls the application layer, never the ledger or a provider",
		"httpapi → local/runsc: the REST API is a surface: it calls the application layer, never the ledger or a provider",
		"sbx → apiv1: the domain imports no other package of the module",
		"secrets → ledger: an application service is called by every surface and calls the ledger through its own Store interface",
		"template → local: only the wiring picks a provider",
	}
	if !slices.Equal(broken, want) || !excused["agent → ledger"] || len(excused) != 1 {
		t.Errorf("broken %q, excused %v; want %q", broken, excused, want)
	}
}

// docs/ARCHITECTURE.md's package table has a row for every package of the
// module, and none for a package that is gone.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	module, pkgs := list(t, "./...")
	dir := root(t)
	f, err := os.Open(filepath.Join(dir, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string]bool{}
	row := regexp.MustCompile("^\\| `([^`]+)`")
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if m := row.FindStringSubmatch(sc.Text()); m != nil {
			rows[m[1]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, p := range pkgs {
		n := name(module, p.ImportPath)
		listed[n] = true
		if !rows[n] {
			t.Errorf("docs/ARCHITECTURE.md's package table has no row for %s", n)
		}
	}
	for n := range rows {
		if listed[n] {
			continue
		}
		// A nested module (tools/runsc) has a row but is no package of this one.
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(path.Clean(n)), "go.mod")); err != nil {
			t.Errorf("docs/ARCHITECTURE.md's package table has a row for %s, which is no package of the module", n)
		}
	}
}

package e2e

import (
	"context"
	"crypto/tls"
	"debug/elf"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/testenv"
)

// The real binary with no flags beyond its place: first start bootstraps
// and says where the admin key is (its output is no terminal, so never the
// key itself), creates answer 503 naming the missing
// provider, SIGTERM shuts down cleanly, and a restart keeps the key.
func TestServeBinary(t *testing.T) {
	s := startServer(t, serverOpts{bin: sbxBin, args: []string{"--runsc", "/nonexistent/runsc"}})
	info, err := os.Stat(filepath.Join(s.dataDir, "admin.key"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("admin key file: %v %v", err, info.Mode())
	}
	if strings.Contains(s.out.String(), s.key) || !strings.Contains(s.out.String(), "admin.key") {
		t.Fatalf("first start, its output no terminal, printed the admin key or not where it is:\n%s", s.out)
	}
	s.fail("POST", "/api/v1/sandboxes", map[string]any{"templateID": "base"}, http.StatusServiceUnavailable,
		`provider "local" is not available: runsc is not usable: runsc /nonexistent/runsc`)
	var served []byte
	_, served = s.do("GET", "/api/v1/openapi.json", nil)
	if !strings.Contains(string(served), `"openapi"`) {
		t.Fatalf("openapi document: %.200s", served)
	}
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: exit %v\n%s", err, s.out)
	}
	s.start()
	if strings.Contains(s.out.String(), s.key) {
		t.Fatal("a restart printed the admin key again")
	}
	var me, health map[string]any
	s.call("GET", "/api/v1/me", nil, http.StatusOK, &me)
	s.call("GET", "/healthz", nil, http.StatusOK, &health)
	if strings.Contains(s.out.String(), `"level":"ERROR"`) {
		t.Errorf("errors logged:\n%s", s.out)
	}
}

// The binary is static (it is bind-mounted into sandboxes as their agent) and
// links none of the test support.
func TestBinaryIsStaticAndLean(t *testing.T) {
	f, err := elf.Open(sbxBin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("sbx has a dynamic loader: it is not static")
		}
	}
	out, err := exec.Command("go", "list", "-deps", "../cmd/sbx").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range []string{"github.com/sbxdev/sbx/providertest", "github.com/sbxdev/sbx/internal/contract", "github.com/getkin/kin-openapi", "testing"} {
		for _, dep := range strings.Fields(string(out)) {
			if dep == pkg || strings.HasPrefix(dep, pkg+"/") {
				t.Errorf("sbx links %s", dep)
			}
		}
	}
}

// checkRunsc: serve found the runsc that scripts/test.sh built from the pinned
// module ($SBX_RUNSC), checked that it runs, and reports its version.
func checkRunsc(t *testing.T, s *server) {
	want := os.Getenv("SBX_RUNSC")
	if want == "" {
		if testenv.InCI() {
			t.Fatal("SBX_RUNSC is not set: scripts/test.sh builds runsc and sets it")
		}
		t.Log("SBX_RUNSC is not set; not checking the runsc report (scripts/test.sh builds runsc and sets it)")
		return
	}
	mod, err := os.ReadFile("../tools/runsc/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	var sum apiv1.Summary
	s.call("GET", "/api/v1/observability/summary", nil, http.StatusOK, &sum)
	if len(sum.Engines) != 1 {
		t.Fatalf("engines: %+v", sum.Engines)
	}
	e := sum.Engines[0]
	if !e.Available || e.Name != "runsc" || !strings.Contains(string(mod), "gvisor.dev/gvisor "+e.Version+"\n") {
		t.Fatalf("runsc in the summary: %+v", e)
	}
}

// serve --tls-cert/--tls-key speaks HTTPS, for the API and for preview
// hosts under a wildcard certificate; the URLs it hands out are https.
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	roots := testenv.WriteCert(t, certFile, keyFile, "localhost", "*.sbx.localhost")
	data := filepath.Join(t.TempDir(), "data")
	half := append([]string{"serve", "--data-dir", data, "--listen", "127.0.0.1:0", "--tls-cert", certFile}, testenv.NewInstance(t).Args()...)
	if out, err := exec.Command(sbxBin, half...).CombinedOutput(); err == nil || !strings.Contains(string(out), "--tls-cert and --tls-key go together") {
		t.Errorf("--tls-cert alone: %v %s", err, out)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("serve refused half a key pair only after making its data dir: %v", err)
	}
	cfg := &tls.Config{RootCAs: roots, ServerName: "localhost"}
	s := startServer(t, serverOpts{tls: cfg, args: []string{"--tls-cert", certFile, "--tls-key", keyFile}})
	sb := s.create(map[string]any{"waitReady": true, "ports": []int{8080}})
	if !strings.HasPrefix(sb.RuntimeURL, "https://49983-"+sb.SandboxID+".sbx.localhost:") || !strings.HasPrefix(sb.Ports[0].URL, "https://8080-") {
		t.Errorf("URLs over TLS: %s %+v", sb.RuntimeURL, sb.Ports)
	}
	// A preview host, named in the TLS handshake and the request alike.
	host := "8080-" + sb.SandboxID + ".sbx.localhost"
	c := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: host},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, s.addr)
		}}}
	resp, err := c.Get("https://" + host + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "is private") {
		t.Errorf("a preview host over TLS: %d %s", resp.StatusCode, body)
	}
}

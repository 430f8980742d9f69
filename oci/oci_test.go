package oci

import (
	"net/netip"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/testregistry"
)

// A registry on loopback is refused unless the operator named it; named, a
// tag resolves to its digest with the right credentials only; a missing
// image and a malformed reference are 400s, each naming the field.
func TestResolve(t *testing.T) {
	reg := testregistry.Serve(t)
	ref := reg.Push(t, "team/app", "v1", v1.Config{}, testregistry.TreeLayer(t, t.TempDir()))
	good := Auth{Username: testregistry.User, Password: testregistry.Password}
	ctx := t.Context()

	_, err := New(nil).Resolve(ctx, "image.uri", ref, good)
	if e, ok := err.(*sbx.Error); !ok || e.Code != sbx.EInvalid || len(e.Fields) != 1 || e.Fields[0].Field != "image.uri" || !strings.Contains(e.Message, "not at a public address") {
		t.Errorf("a loopback registry not named by the operator: %v", err)
	}
	allowed := New([]string{reg.Host})
	pinned, err := allowed.Resolve(ctx, "image.uri", ref, good)
	if err != nil || !strings.HasPrefix(pinned, reg.Host+"/team/app@sha256:") {
		t.Fatalf("resolving %s: %q %v", ref, pinned, err)
	}
	if again, err := allowed.Resolve(ctx, "image.uri", pinned, good); err != nil || again != pinned {
		t.Errorf("resolving the pinned %s: %q %v", pinned, again, err)
	}
	for _, a := range []Auth{{}, {Username: testregistry.User, Password: "wrong"}} {
		_, err := allowed.Resolve(ctx, "image.uri", ref, a)
		if e, ok := err.(*sbx.Error); !ok || e.Code != sbx.EInvalid || !strings.Contains(e.Message, "refused") || a.Password != "" && strings.Contains(e.Message, a.Password) {
			t.Errorf("credentials %q: %v", a.Username, err)
		}
	}
	if _, err := allowed.Resolve(ctx, "image.uri", reg.Host+"/team/none:v1", good); sbx.ErrorCode(err) != sbx.EInvalid || !strings.Contains(err.Error(), "not found") {
		t.Errorf("a missing image: %v", err)
	}
	if _, err := allowed.Resolve(ctx, "image.uri", "Not An Image!", good); sbx.ErrorCode(err) != sbx.EInvalid {
		t.Errorf("a malformed reference: %v", err)
	}
}

func TestPublic(t *testing.T) {
	for a, want := range map[string]bool{
		"8.8.8.8": true, "2606:4700::1111": true, "::ffff:1.1.1.1": true,
		"127.0.0.1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false, "169.254.169.254": false,
		"100.64.0.1": false, "0.0.0.0": false, "::1": false, "fd00::1": false, "fe80::1": false, "::ffff:127.0.0.1": false,
		"224.0.0.1": false, "255.255.255.255": false,
		"64:ff9b::a9fe:a9fe": false, "2002:a9fe:a9fe::1": false, "2001:0:a9fe:a9fe::1": false, "::a9fe:a9fe": false, "fec0::1": false, "2001:db8::1": false,
	} {
		if got := Public(netip.MustParseAddr(a)); got != want {
			t.Errorf("Public(%s) = %v", a, got)
		}
	}
}

// The operator's list of private registries: hosts or host:ports, as image
// references name them; a URL, a repository or an empty entry is refused.
func TestParseRegistries(t *testing.T) {
	if got, err := ParseRegistries(" registry.internal:5000, 127.0.0.1:5000,localhost"); err != nil || strings.Join(got, " ") != "registry.internal:5000 127.0.0.1:5000 localhost" {
		t.Errorf("a good list: %q %v", got, err)
	}
	for _, bad := range []string{"https://registry.internal", "registry.internal/team", "a,,b", "", "user@host"} {
		if _, err := ParseRegistries(bad); err == nil || !strings.Contains(err.Error(), "is not a registry") {
			t.Errorf("ParseRegistries(%q): %v", bad, err)
		}
	}
}

// Package oci reaches OCI registries on a tenant's behalf: it resolves an
// image reference to the digest its registry serves now, with the tenant's
// credentials, and gives the options a pull of it uses. Every connection
// goes through a dialer that reaches public addresses only, so that an
// image reference cannot make serve call the host's own services, its
// network's or a cloud's metadata endpoint; the operator may name private
// registries that tenants may use all the same. The host's own registry
// credentials (a Docker config) are never used for a tenant.
package oci

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/sbxdev/sbx"
)

// Registries are the registries tenants may pull from: any at a public
// address, and those the operator named wherever they are. One is made by
// New and shared: its transport, and so its connections, serve every pull.
type Registries struct {
	named     []string // the private registries
	transport http.RoundTripper
}

// New answers the Registries of these private ones (host or host:port, as
// in an image reference; as ParseRegistries reads them).
func New(private []string) *Registries {
	r := &Registries{named: private}
	r.transport = r.guarded()
	return r
}

// ParseRegistries reads a list of registries separated by commas, each a
// host or host:port, as an image reference names it.
func ParseRegistries(s string) ([]string, error) {
	var out []string
	for _, r := range strings.Split(s, ",") {
		r = strings.TrimSpace(r)
		if _, err := name.NewRegistry(r, name.StrictValidation); err != nil || r == "" || strings.ContainsAny(r, "/@") {
			return nil, fmt.Errorf("%q is not a registry: give its HOST or HOST:PORT, as an image reference names it", r)
		}
		out = append(out, r)
	}
	return out, nil
}

// Auth is a tenant's registry credentials for one pull; empty: anonymous.
type Auth struct{ Username, Password string }

// Resolve parses ref (a tag or digest reference; Docker Hub's short forms
// as `docker pull` reads them) and asks its registry, with a's credentials,
// for the manifest it names: it answers the reference pinned to that
// manifest's digest (registry/repository@sha256:…). Its errors are the
// caller's to fix, with field as the field that names the image.
func (r *Registries) Resolve(ctx context.Context, field, ref string, a Auth) (string, error) {
	parsed, err := name.ParseReference(ref)
	if err != nil {
		return "", sbx.Invalid(field, "%q is not an image reference (REGISTRY/REPOSITORY[:TAG] or @sha256:DIGEST): %v", ref, err)
	}
	// Get, not Head: the manifest's bytes are checked against the digest
	// the registry names, which a HEAD would take on trust.
	desc, err := remote.Get(parsed, r.Options(ctx, a)...)
	if err != nil {
		return "", r.refusal(field, parsed, err)
	}
	return parsed.Context().Name() + "@" + desc.Digest.String(), nil
}

// Options are the remote options of a request for a tenant: a's
// credentials (never the host's) and the guarded transport.
func (r *Registries) Options(ctx context.Context, a Auth) []remote.Option {
	var auth authn.Authenticator = authn.Anonymous
	if a.Username != "" || a.Password != "" {
		auth = &authn.Basic{Username: a.Username, Password: a.Password}
	}
	return []remote.Option{remote.WithContext(ctx), remote.WithAuth(auth), remote.WithTransport(r.transport)}
}

// guarded is an HTTP transport whose dialer refuses addresses that are not
// public, but for the private registries (GuardedDial).
func (r *Registries) guarded() http.RoundTripper {
	t := remote.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil // a proxy would dial for us, unchecked
	t.DialContext = GuardedDial(&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}, r.private)
	return t
}

// GuardedDial is a DialContext that refuses addresses that are not Public,
// but for those allowed says (given host:port as dialled) may be any
// address. The address is checked as dialled, after the name is resolved,
// so DNS cannot be used to slip by. What reaches a URL a tenant gives (a
// registry, a webhook) dials with it, with no proxy.
func GuardedDial(d *net.Dialer, allowed func(addr string) bool) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := *d
		if allowed == nil || !allowed(addr) {
			d.Control = func(_, address string, _ syscall.RawConn) error {
				ap, err := netip.ParseAddrPort(address)
				if err != nil {
					return err
				}
				if !Public(ap.Addr()) {
					return &privateError{host: addr, addr: ap.Addr()}
				}
				return nil
			}
		}
		return d.DialContext(ctx, network, addr)
	}
}

// private reports whether addr (host:port as dialled) is a registry the
// operator allowed at any address. A registry named without a port allows
// its default ports.
func (r *Registries) private(addr string) bool {
	host, port, _ := net.SplitHostPort(addr)
	return slices.ContainsFunc(r.named, func(p string) bool {
		return strings.EqualFold(p, addr) || (strings.EqualFold(p, host) && (port == "443" || port == "80"))
	})
}

// Public reports whether a is an address a tenant's pull may reach: a
// global unicast IPv4 or IPv6 address outside sbx's unreachable ranges.
func Public(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsGlobalUnicast() || a.IsPrivate() {
		return false
	}
	if a.Is4() {
		return !slices.ContainsFunc(sbx.EgressUnreachable(), func(p netip.Prefix) bool { return p.Contains(a) })
	}
	return globalV6.Contains(a) && !slices.ContainsFunc(tunnelsV6, func(p netip.Prefix) bool { return p.Contains(a) })
}

// globalV6 is IPv6's global unicast space; tunnelsV6 are the parts of it
// that carry an IPv4 address (6to4, Teredo) or are for documentation.
var (
	globalV6  = netip.MustParsePrefix("2000::/3")
	tunnelsV6 = []netip.Prefix{netip.MustParsePrefix("2002::/16"), netip.MustParsePrefix("2001::/32"), netip.MustParsePrefix("2001:db8::/32")}
)

type privateError struct {
	host string
	addr netip.Addr
}

func (e *privateError) Error() string {
	return fmt.Sprintf("%s is at %s, which is not a public address", e.host, e.addr)
}

// refusal words a registry's refusal for the tenant.
func (r *Registries) refusal(field string, ref name.Reference, err error) error {
	var pe *privateError
	if errors.As(err, &pe) {
		return sbx.Invalid(field, "registry %s is not at a public address: sbx pulls tenants' images from public registries only, and those its operator names (serve --private-registries)", ref.Context().RegistryStr())
	}
	var te *transport.Error
	if errors.As(err, &te) {
		switch te.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return sbx.Invalid(field, "registry %s refused to serve %s to these credentials (%d): give a username and password (or token) that may pull it", ref.Context().RegistryStr(), ref, te.StatusCode)
		case http.StatusNotFound:
			return sbx.Invalid(field, "image %s was not found in registry %s: check its repository and tag", ref, ref.Context().RegistryStr())
		}
	}
	return sbx.Errorf(sbx.EProvider, "asking registry %s for %s: %v", ref.Context().RegistryStr(), ref, err)
}

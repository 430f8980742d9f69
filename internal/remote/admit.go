package remote

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/sbxdev/sbx"
)

// Service is a remote service as its provider last heard it.
type Service struct {
	answer atomic.Int64 // when it last answered, in Unix nanoseconds
}

// Answered records that the service answered (any status: it is up).
func (s *Service) Answered() { s.answer.Store(time.Now().UnixNano()) }

// Admit refuses what provider name cannot start, which is anything but
// its service's own templates (an image by reference, an sbx snapshot,
// sbx volumes, GPUs), and, when the service has not answered for a
// second, a service that does not answer now (check's EUnavailable): a
// create meets an outage before it is recorded.
func (s *Service) Admit(ctx context.Context, name string, spec sbx.Spec, check func(context.Context) error) error {
	if time.Since(time.Unix(0, s.answer.Load())) > time.Second {
		if err := check(ctx); sbx.ErrorCode(err) == sbx.EUnavailable {
			return err
		}
	}
	switch {
	case spec.Image != nil:
		return sbx.Errorf(sbx.EUnsupported, "provider %s starts sandboxes from its service's templates (templateID), not from an OCI image by reference", name)
	case spec.Snapshot != nil:
		return sbx.Errorf(sbx.EUnsupported, "provider %s does not start sandboxes from sbx snapshots", name)
	case len(spec.Volumes) > 0:
		return sbx.Errorf(sbx.EUnsupported, "provider %s does not mount sbx volumes", name)
	case spec.Resources.GPU != nil:
		return sbx.Errorf(sbx.EUnsupported, "provider %s does not place GPUs", name)
	}
	return nil
}

// The metadata every sandbox of a remote provider carries, which its List
// (and so reconcile) filters by: a serve lists only what it made with
// that provider, though several serves, or one serve's two providers,
// share an installation.
const (
	MetaSandbox  = "sbx_sandbox"  // the sbx UUID
	MetaInstance = "sbx_instance" // the serve instance's name
	MetaProvider = "sbx_provider" // the provider's name
)

// Metadata is spec's metadata with the keys that name the sandbox sbx's.
func Metadata(spec sbx.Spec, instance, provider string) map[string]string {
	md := make(map[string]string, len(spec.Metadata)+3)
	for k, v := range spec.Metadata {
		md[k] = v
	}
	md[MetaSandbox], md[MetaInstance], md[MetaProvider] = spec.SandboxID, instance, provider
	return md
}

// Ours says whether md names a sandbox that instance made with provider.
func Ours(md map[string]string, instance, provider string) bool {
	return md[MetaInstance] == instance && md[MetaProvider] == provider
}

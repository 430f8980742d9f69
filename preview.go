package sbx

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"time"
)

// Preview is who reaches a sandbox's ports at its preview URLs
// ({port}-{sandboxID}.{domain}) and what their traffic does to it. The
// zero Preview is the default: private, the app sees the preview host,
// traffic wakes a paused sandbox.
type Preview struct {
	// Public lets anyone with the URL in. A private preview takes the
	// sandbox's traffic token, a preview link's token or an API key that
	// reaches the sandbox.
	Public bool
	// LocalHost shows the app Host: localhost:{port} (for dev servers that
	// check it) instead of the preview host.
	LocalHost bool
	// NoWake leaves a paused sandbox paused when preview traffic comes (a
	// 409 says so); by default the traffic wakes it.
	NoWake bool
}

// PreviewPortReserved reports whether port is never reached through a
// preview: the agent's (49983, reached at the runtime URL with the access
// token) and SSH's (22, reached through serve's SSH gateway).
func PreviewPortReserved(port int) bool { return port == 49983 || port == 22 }

// ValidPort reports whether port is a TCP port number.
func ValidPort(port int) bool { return port >= 1 && port <= 65535 }

// TrafficToken is the token that opens sb's private previews: derived from
// its access token (so rotating that rotates this), and telling nothing of
// it. It opens previews only, never the agent. Empty without an access
// token.
func (sb Sandbox) TrafficToken() string {
	if sb.AccessToken == "" {
		return ""
	}
	m := hmac.New(sha256.New, []byte(sb.AccessToken))
	m.Write([]byte("sbx preview traffic token"))
	return "sbt_" + base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:24])
}

// PreviewLink is a URL to one port of a sandbox that works without other
// credentials until it expires or is revoked. Its secret is shown once,
// when it is made; the ledger keeps only a hash of it.
type PreviewLink struct {
	ID        string
	OrgID     string
	SandboxID string // sbx UUID
	Port      int
	CreatedAt time.Time
	ExpiresAt time.Time
	RevokedAt time.Time // zero while it works
}

// Works reports whether l opens its port at now.
func (l PreviewLink) Works(now time.Time) bool {
	return l.RevokedAt.IsZero() && now.Before(l.ExpiresAt)
}

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

// MaxPorts bounds the ports a sandbox, runtime or template lists.
const MaxPorts = 32

// CheckPorts checks ports a sandbox would serve, listed at preview URLs,
// given in field: at most MaxPorts, each a TCP port that a preview reaches.
func CheckPorts(p *Problems, field string, ports []int) {
	if len(ports) > MaxPorts {
		p.Add(field, "%s may list at most %d ports", field, MaxPorts)
	}
	for _, port := range ports {
		if !ValidPort(port) || PreviewPortReserved(port) {
			p.Add(field, "port %d must be between 1 and 65535, and not the agent's 49983 or SSH's 22 (never reached through a preview)", port)
		}
	}
}

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

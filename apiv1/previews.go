package apiv1

import "time"

// Preview URLs: {port}-{sandboxID}.{domain} and
// /api/v1/sandboxes/{id}/ports/{port}/… reach what listens on port in the
// sandbox (HTTP/1.1 and WebSocket), ports 22 and 49983 never.

// Preview is who reaches a sandbox's ports at its preview URLs and what
// their traffic does to it.
type Preview struct {
	Access string `json:"access,omitempty" enum:"private,public" doc:"private (default): the traffic token (header X-Sbx-Traffic-Token, or ?sbx_token= once, kept in a cookie), a preview link or an API key that reaches the sandbox (X-API-Key); public: anyone with the URL."`
	Host   string `json:"host,omitempty" enum:"preview,localhost" doc:"The Host header the app sees: the preview host (default), or localhost:{port} for dev servers that check it."`
	Wake   *bool  `json:"wake,omitempty" doc:"Whether preview traffic wakes the sandbox when it is paused (default true); when false such traffic is answered 409 with Retry-After."`
}

// TrafficTokenHeader carries a sandbox's traffic token (or a preview
// link's) on a preview request; TrafficTokenParam does once, in a URL, and
// is exchanged for a cookie scoped to that preview host.
const (
	TrafficTokenHeader = "X-Sbx-Traffic-Token"
	TrafficTokenParam  = "sbx_token"
)

// CreatePreviewLinkRequest is the body of POST …/previews.
type CreatePreviewLinkRequest struct {
	Port    int    `json:"port" minimum:"1" maximum:"65535" doc:"The port in the sandbox; not 22 or 49983."`
	Expires *int64 `json:"expires,omitempty" minimum:"1" maximum:"604800" doc:"Seconds until the link stops working; default 3600."`
}

// PreviewLink is a URL to one port of a sandbox that works without other
// credentials until it expires or is revoked.
type PreviewLink struct {
	ID        string     `json:"id"`
	Port      int        `json:"port"`
	URL       string     `json:"url,omitempty" doc:"The link, with its token: answered once, when it is made."`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt time.Time  `json:"expiresAt"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
}

// PreviewLinkList is a sandbox's preview links, newest first.
type PreviewLinkList struct {
	Items []PreviewLink `json:"items"`
}

// PortURL is a port a sandbox serves and its preview URL.
type PortURL struct {
	Port int    `json:"port"`
	URL  string `json:"url,omitempty"`
}

// The desktop of a sandbox whose template serves one (the catalog's
// desktop): an X display and a VNC server on DesktopPort.
const (
	DesktopPort    = 5900
	DesktopDisplay = ":1"
)

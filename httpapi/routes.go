package httpapi

import "net/http"

// Route is one operation of the API. The OpenAPI document must describe
// exactly these, which the contract test checks.
type Route struct {
	Method  string
	Pattern string // net/http pattern; {name} segments as in OpenAPI
	handler http.Handler
	auth    bool
}

// Routes lists the API's operations.
func (s *Server) Routes() []Route { return s.routes() }

func (s *Server) routes() []Route {
	open := func(method, pattern string, h http.HandlerFunc) Route {
		return Route{Method: method, Pattern: pattern, handler: h}
	}
	authed := func(method, pattern string, h http.HandlerFunc) Route {
		return Route{Method: method, Pattern: pattern, handler: h, auth: true}
	}
	routes := []Route{
		open("GET", "/healthz", s.health),
		open("GET", "/api/v1/openapi.json", s.openapi),
		authed("GET", "/api/v1/me", s.me),
		authed("GET", "/api/v1/observability/summary", s.summary),
		authed("POST", "/api/v1/mcp", s.serveMCP),
		authed("GET", "/api/v1/events", s.listEvents),
		authed("GET", "/api/v1/events/stream", s.followEvents),

		authed("POST", "/api/v1/sandboxes", s.createSandbox),
		authed("GET", "/api/v1/sandboxes", s.listSandboxes),
		authed("GET", "/api/v1/sandboxes/{id}", s.getSandbox),
		authed("DELETE", "/api/v1/sandboxes/{id}", s.deleteSandbox),
		authed("POST", "/api/v1/sandboxes/{id}/connect", s.connectSandbox),
		authed("POST", "/api/v1/sandboxes/{id}/pause", s.pauseSandbox),
		authed("POST", "/api/v1/sandboxes/{id}/resume", s.resumeSandbox),
		authed("POST", "/api/v1/sandboxes/{id}/refreshes", s.refreshSandbox),
		authed("POST", "/api/v1/sandboxes/{id}/timeout", s.setSandboxTimeout),
		authed("PUT", "/api/v1/sandboxes/{id}/egress", s.setSandboxEgress),
		authed("GET", "/api/v1/sandboxes/{id}/logs", s.sandboxLogs),
		authed("GET", "/api/v1/sandboxes/{id}/logs/stream", s.sandboxLogStream),
		authed("GET", "/api/v1/sandboxes/{id}/metrics", s.sandboxMetrics),
		authed("POST", "/api/v1/sandboxes/{id}/previews", s.createPreviewLink),
		authed("GET", "/api/v1/sandboxes/{id}/previews", s.listPreviewLinks),
		authed("DELETE", "/api/v1/sandboxes/{id}/previews/{link_id}", s.revokePreviewLink),
		authed("POST", "/api/v1/sandboxes/{id}/ssh", s.sandboxSSH),
		open("GET", "/api/v1/sandboxes/{id}/desktop", s.desktopPage),
		open("GET", "/api/v1/sandboxes/{id}/desktop/websockify", s.desktopSocket),
		authed("GET", "/api/v1/sandboxes/{id}/desktop/screenshot", s.desktopScreenshot),
		authed("POST", "/api/v1/sandboxes/{id}/snapshots", s.createSnapshot),
		authed("POST", "/api/v1/sandboxes/{id}/fork", s.forkSandbox),
		authed("GET", "/api/v1/snapshots", s.listSnapshots),
		authed("GET", "/api/v1/snapshots/{snapshot_id}", s.getSnapshot),
		authed("DELETE", "/api/v1/snapshots/{snapshot_id}", s.deleteSnapshot),
		authed("GET", "/api/v1/templates", s.listTemplates),
		authed("POST", "/api/v1/templates", s.createTemplate),
		authed("GET", "/api/v1/template-catalog", s.templateCatalog),
		authed("GET", "/api/v1/templates/{template}", s.getTemplate),
		authed("PUT", "/api/v1/templates/{template}/tags/{tag}", s.tagTemplate),
		authed("DELETE", "/api/v1/templates/{template}/tags/{tag}", s.untagTemplate),
		authed("GET", "/api/v1/templates/{template}/builds", s.listBuilds),
		authed("GET", "/api/v1/templates/{template}/builds/{build}", s.getBuild),
		authed("GET", "/api/v1/templates/{template}/builds/{build}/logs", s.buildLogs),
		authed("DELETE", "/api/v1/templates/{template}", s.deleteTemplate),
		authed("GET", "/api/v1/admin/template-warm-pools", s.listWarmPools),
		authed("PUT", "/api/v1/admin/template-warm-pools/{template}", s.setWarmPool),
		authed("DELETE", "/api/v1/admin/template-warm-pools/{template}", s.deleteWarmPool),
		authed("PUT", "/api/v1/admin/templates/{template}/ready", s.prepareTemplate),
		authed("GET", "/api/v1/admin/templates/{template}/ready", s.readyTemplate),
		authed("DELETE", "/api/v1/admin/templates/{template}/ready", s.dropReadyTemplate),
		authed("POST", "/api/v1/volumes", s.createVolume),
		authed("GET", "/api/v1/volumes", s.listVolumes),
		authed("GET", "/api/v1/volumes/{volume}", s.getVolume),
		authed("DELETE", "/api/v1/volumes/{volume}", s.deleteVolume),
		authed("POST", "/api/v1/volumes/{volume}/resize", s.resizeVolume),
		authed("GET", "/api/v1/volumes/{volume}/files", s.readVolumeFile),
		authed("PUT", "/api/v1/volumes/{volume}/files", s.writeVolumeFile),
		authed("GET", "/api/v1/volumes/{volume}/files/list", s.listVolumeFiles),

		authed("GET", "/api/v1/org/{org}/sandboxes", s.orgSandboxes),
		authed("GET", "/api/v1/org/{org}/sandboxes/usage", s.orgUsage),
		authed("GET", "/api/v1/org/{org}/sandboxes/{provider_sandbox_id}", s.orgGetSandbox),
		authed("DELETE", "/api/v1/org/{org}/sandboxes/{provider_sandbox_id}", s.orgDeleteSandbox),
		authed("GET", "/api/v1/org/{org}/sandboxes/{provider_sandbox_id}/logs", s.orgSandboxLogs),

		authed("GET", "/api/v1/org/{org}/credits", s.orgCredits),
		authed("GET", "/api/v1/org/{org}/credits/spending", s.orgSpending),
		authed("GET", "/api/v1/rates", s.listRates),
		authed("POST", "/api/v1/admin/rates", s.addRate),
		authed("POST", "/api/v1/admin/orgs/{org}/credits", s.topUp),

		authed("GET", "/api/v1/admin/orgs", s.listOrgs),
		authed("POST", "/api/v1/admin/orgs", s.createOrg),
		authed("PUT", "/api/v1/admin/orgs/{org}/plan", s.setPlan),
		authed("PUT", "/api/v1/admin/orgs/{org}/verification", s.setOrgVerification),
		authed("PUT", "/api/v1/admin/users/{user}/verification", s.setUserVerification),
		open("POST", "/api/v1/kyc/webhook", s.kycWebhook),

		authed("GET", "/api/v1/org/{org}/workspaces", s.listWorkspaces),
		authed("POST", "/api/v1/org/{org}/workspaces", s.createWorkspace),
		authed("GET", "/api/v1/org/{org}/ws/{workspace}/projects", s.listProjects),
		authed("POST", "/api/v1/org/{org}/ws/{workspace}/projects", s.createProject),
		authed("GET", "/api/v1/org/{org}/ws/{workspace}/members", s.listMembers),
		authed("POST", "/api/v1/org/{org}/ws/{workspace}/members", s.addMember),
		authed("DELETE", "/api/v1/org/{org}/ws/{workspace}/members/{member}", s.removeMember),
		authed("GET", "/api/v1/org/{org}/ws/{workspace}/runtimes", s.listRuntimes),
		authed("GET", "/api/v1/org/{org}/ws/{workspace}/runtimes/{runtime_id}", s.getRuntime),
		authed("PATCH", "/api/v1/org/{org}/ws/{workspace}/runtimes/{runtime_id}", s.updateRuntime),
		authed("POST", "/api/v1/org/{org}/ws/{workspace}/runtimes/{runtime_id}/start", s.startRuntime),
		authed("POST", "/api/v1/org/{org}/ws/{workspace}/runtimes/{runtime_id}/pause", s.pauseRuntime),
		authed("POST", "/api/v1/org/{org}/ws/{workspace}/runtimes/{runtime_id}/resume", s.resumeRuntime),
		authed("POST", "/api/v1/org/{org}/ws/{workspace}/runtimes/{runtime_id}/reset", s.resetRuntime),
		authed("POST", "/api/v1/org/{org}/ws/{workspace}/runtimes/{runtime_id}/keepalive", s.keepaliveRuntime),
		authed("GET", "/api/v1/org/{org}/ws/{workspace}/sessions", s.listSessions),
		authed("POST", "/api/v1/org/{org}/ws/{workspace}/sessions", s.createSession),
		authed("GET", "/api/v1/org/{org}/ws/{workspace}/sessions/{session_id}", s.getSession),
		authed("GET", "/api/v1/org/{org}/ws/{workspace}/sessions/{session_id}/messages", s.listSessionMessages),
		authed("POST", "/api/v1/org/{org}/ws/{workspace}/sessions/{session_id}/messages", s.appendSessionMessages),
		authed("GET", "/api/v1/org/{org}/ws/{workspace}/runtimes/{runtime_id}/capabilities", s.listRuntimeCapabilities),
		authed("POST", "/api/v1/org/{org}/ws/{workspace}/runtimes/{runtime_id}/capabilities", s.installCapability),
		authed("GET", "/api/v1/org/{org}/ws/{workspace}/runtimes/{runtime_id}/capabilities/resolved", s.resolvedCapabilities),
		authed("PATCH", "/api/v1/org/{org}/ws/{workspace}/runtimes/{runtime_id}/capabilities/{binding_id}", s.updateRuntimeCapability),
		authed("DELETE", "/api/v1/org/{org}/ws/{workspace}/runtimes/{runtime_id}/capabilities/{binding_id}", s.uninstallCapability),
		authed("GET", "/api/v1/capabilities/catalog", s.capabilityCatalog),
		authed("GET", "/api/v1/org/{org}/capabilities", s.capabilityInventory),
		authed("POST", "/api/v1/org/{org}/capabilities", s.uploadCapability),
		authed("DELETE", "/api/v1/org/{org}/capabilities/{name}/{version}", s.deleteCapability),
		authed("GET", "/api/v1/org/{org}/keys", s.listKeys),
		authed("POST", "/api/v1/org/{org}/keys", s.createKey),
		authed("DELETE", "/api/v1/org/{org}/keys/{key}", s.revokeKey),
		authed("GET", "/api/v1/org/{org}/ssh-keys", s.listSSHKeys),
		authed("POST", "/api/v1/org/{org}/ssh-keys", s.addSSHKey),
		authed("DELETE", "/api/v1/org/{org}/ssh-keys/{ssh_key}", s.removeSSHKey),
		authed("GET", "/api/v1/org/{org}/secrets", s.listSecrets),
		authed("POST", "/api/v1/org/{org}/secrets", s.setSecret),
		authed("DELETE", "/api/v1/org/{org}/secrets/{secret}", s.deleteSecret),
		authed("GET", "/api/v1/org/{org}/webhooks", s.listWebhooks),
		authed("POST", "/api/v1/org/{org}/webhooks", s.createWebhook),
		authed("DELETE", "/api/v1/org/{org}/webhooks/{webhook}", s.deleteWebhook),
		authed("GET", "/api/v1/org/{org}/webhooks/{webhook}/deliveries", s.listDeliveries),
		authed("POST", "/api/v1/org/{org}/webhooks/{webhook}/deliveries/{delivery}/redeliver", s.redeliver),
	}
	for _, a := range agentRoutes {
		routes = append(routes, authed(a.method, "/api/v1/sandboxes/{id}"+a.pattern, s.agentProxy))
	}
	return routes
}

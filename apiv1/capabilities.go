package apiv1

import "time"

// Capabilities: versioned bundles of tools, skills, MCP servers, prompts and
// dependencies (docs/CAPABILITIES.md), from the public catalog shipped with
// sbx or an org's inventory, installed on runtimes by bindings.

// Capability describes one version of a capability bundle.
type Capability struct {
	Name         string           `json:"name"`
	Version      string           `json:"version" doc:"A semantic version, MAJOR.MINOR.PATCH."`
	Description  string           `json:"description"`
	Source       string           `json:"source" enum:"catalog,inventory"`
	Flags        []CapabilityFlag `json:"flags" doc:"Switches a binding sets; components gated by a flag are there only while it is true."`
	Tools        []string         `json:"tools" doc:"The names of its tools."`
	Skills       []string         `json:"skills"`
	MCPServers   []string         `json:"mcp_servers"`
	Prompts      []string         `json:"prompts"`
	Dependencies []string         `json:"dependencies"`
	SHA256       string           `json:"sha256,omitempty" doc:"Of the uploaded archive (inventory only)."`
	Size         int64            `json:"size,omitempty" doc:"Bytes of the uploaded archive (inventory only)."`
	CreatedAt    *time.Time       `json:"created_at,omitempty" doc:"When it was uploaded (inventory only)."`
}

// CapabilityFlag is a flag a capability declares.
type CapabilityFlag struct {
	Name        string `json:"name"`
	Default     bool   `json:"default"`
	Description string `json:"description"`
}

// CapabilityList is a list of capability versions: the whole catalog, or a
// page of the org's inventory (oldest upload first).
type CapabilityList struct {
	Items      []Capability `json:"items"`
	NextCursor string       `json:"next_cursor,omitempty"`
}

// CapabilityBinding installs one version of a capability on a runtime.
type CapabilityBinding struct {
	ID        string          `json:"id"`
	RuntimeID string          `json:"runtime_id"`
	Name      string          `json:"name"`
	Version   string          `json:"version"`
	Source    string          `json:"source" enum:"catalog,inventory"`
	Enabled   bool            `json:"enabled"`
	Flags     map[string]bool `json:"flags" doc:"The flags set on this binding; the manifest's defaults hold for the others (the resolved view shows every flag's value)."`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// CapabilityBindingList is a page of a runtime's bindings, oldest first.
type CapabilityBindingList struct {
	Items      []CapabilityBinding `json:"items"`
	NextCursor string              `json:"next_cursor,omitempty"`
}

// InstallCapabilityRequest is the body of POST …/runtimes/{runtime_id}/capabilities.
type InstallCapabilityRequest struct {
	Name    string          `json:"name" pattern:"^[a-z0-9][a-z0-9-]*$"`
	Version string          `json:"version,omitempty" doc:"Default: the newest (the highest release; a pre-release only when there is no release)."`
	Source  string          `json:"source,omitempty" enum:"inventory,catalog" doc:"Default: the org's inventory when it has the name, else the catalog."`
	Flags   map[string]bool `json:"flags,omitempty" doc:"Flags to set; each must be declared by the capability."`
	Enabled *bool           `json:"enabled,omitempty" doc:"Default true."`
}

// UpdateCapabilityRequest is the body of PATCH …/capabilities/{binding_id}:
// the fields given change the binding.
type UpdateCapabilityRequest struct {
	Enabled *bool            `json:"enabled,omitempty"`
	Flags   *map[string]bool `json:"flags,omitempty" doc:"Replaces the flags set on the binding ({} goes back to every default); each must be declared by the version the binding ends with."`
	Version *string          `json:"version,omitempty" doc:"Another version from the binding's source; the flags set must be declared by it."`
}

// ResolvedCapabilities is the merged set of a runtime's enabled bindings,
// flags applied: what every start of the runtime materializes in
// its sandbox under root, where resolved.json holds this same document.
type ResolvedCapabilities struct {
	Root         string               `json:"root" doc:"Where capabilities are in the sandbox: each under root/<name>."`
	Capabilities []ResolvedCapability `json:"capabilities" doc:"The enabled bindings, by name."`
	Tools        []ResolvedTool       `json:"tools"`
	Skills       []ResolvedSkill      `json:"skills"`
	MCPServers   []ResolvedMCPServer  `json:"mcp_servers"`
	Prompts      []ResolvedPrompt     `json:"prompts"`
	Dependencies []ResolvedDependency `json:"dependencies"`
	Env          map[string]string    `json:"env" doc:"Environment variables the capabilities set."`
	Conflicts    []CapabilityConflict `json:"conflicts" doc:"Two capabilities giving one environment variable different values, or one MCP server or tool name: each names both sides and which is used (the first capability by name)."`
}

// ResolvedCapability is one enabled binding in the resolved set.
type ResolvedCapability struct {
	BindingID   string          `json:"binding_id"`
	Name        string          `json:"name"`
	Version     string          `json:"version"`
	Source      string          `json:"source" enum:"catalog,inventory"`
	Description string          `json:"description"`
	Dir         string          `json:"dir" doc:"Its files in the sandbox."`
	Flags       map[string]bool `json:"flags" doc:"Every flag it declares, with its value."`
}

// ResolvedTool is a tool: an executable file, on PATH as /opt/sbx/bin/<name>.
type ResolvedTool struct {
	Capability  string `json:"capability"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Path        string `json:"path" doc:"The file in the sandbox."`
}

// ResolvedSkill is a skill: a directory holding SKILL.md.
type ResolvedSkill struct {
	Capability  string `json:"capability"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Path        string `json:"path" doc:"The directory in the sandbox."`
}

// ResolvedMCPServer is an MCP server definition, ${CAPABILITY_DIR} replaced
// by the capability's directory.
type ResolvedMCPServer struct {
	Capability string            `json:"capability"`
	Name       string            `json:"name"`
	Transport  string            `json:"transport" enum:"stdio,http"`
	Command    string            `json:"command,omitempty"`
	Args       []string          `json:"args,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	URL        string            `json:"url,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
}

// ResolvedPrompt is an agent prompt: a text file.
type ResolvedPrompt struct {
	Capability  string `json:"capability"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Path        string `json:"path" doc:"The file in the sandbox."`
}

// ResolvedDependency is a dependency the sandbox is checked for, and given
// by its install script when the check fails.
type ResolvedDependency struct {
	Capability string `json:"capability"`
	Name       string `json:"name"`
	Check      string `json:"check"`
	Install    string `json:"install,omitempty"`
	Timeout    int    `json:"timeout" doc:"Seconds the install may take."`
}

// CapabilityConflict is two capabilities wanting one thing differently.
type CapabilityConflict struct {
	Kind         string   `json:"kind" enum:"env,mcp_server,tool"`
	Name         string   `json:"name" doc:"The variable, MCP server or tool."`
	Capabilities []string `json:"capabilities" doc:"Both sides, the one used first."`
	Used         string   `json:"used" doc:"The capability whose definition is in the resolved set."`
	Detail       string   `json:"detail"`
}

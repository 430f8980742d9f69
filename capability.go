package sbx

import "time"

// Capabilities (of runtimes, not to be confused with a provider's
// Capabilities): versioned bundles of tools, skills, MCP servers, prompts and
// dependencies, installed on a runtime by a binding. Package capability holds
// the bundles' format; the ledger keeps an org's inventory and the bindings.

// CapabilitySource says where a binding's bundle comes from.
type CapabilitySource string

// The sources of bundles.
const (
	CapabilityCatalog   CapabilitySource = "catalog"   // shipped with sbx
	CapabilityInventory CapabilitySource = "inventory" // uploaded to the org
)

// Valid reports whether s is one of the sources.
func (s CapabilitySource) Valid() bool { return s == CapabilityCatalog || s == CapabilityInventory }

// CapabilityBundle is one version of a capability in an org's inventory:
// what its manifest says (as JSON) and what its archive is. Name and version
// identify it in the org.
type CapabilityBundle struct {
	OrgID       string
	Name        string
	Version     string
	Description string
	Manifest    []byte // the manifest as JSON
	SHA256      string // of the archive, hex
	Size        int64  // of the archive, in bytes
	CreatedAt   time.Time
}

// CapabilityBinding installs a capability (one version, from one source) on
// a runtime. It hangs off the runtime, not its sandbox, so it outlives every
// pause, resume, reset and new sandbox. A runtime has at most one binding per
// capability name.
type CapabilityBinding struct {
	ID        string
	OrgID     string
	RuntimeID string
	Name      string
	Version   string
	Source    CapabilitySource
	Enabled   bool
	Flags     map[string]bool // the flags set on this binding; the manifest's defaults fill in the rest
	CreatedAt time.Time
	UpdatedAt time.Time
}

package capability

import (
	"fmt"
	"sort"
	"strings"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

// Where capabilities are in a sandbox.
const (
	Root   = "/opt/sbx/capabilities" // each capability under Root/<name>; the resolved set in Root/resolved.json
	BinDir = "/opt/sbx/bin"          // a command per tool
)

// DirVar in an MCP server's command, args, env, url or headers stands for
// the capability's directory in the sandbox.
const DirVar = "${CAPABILITY_DIR}"

// Dir is where capability name's files are in a sandbox.
func Dir(name string) string { return Root + "/" + name }

// Item is a binding with its bundle, to resolve.
type Item struct {
	Binding sbx.CapabilityBinding
	Bundle  *Bundle // needed when the binding is enabled
}

// Resolved is the merged set of a runtime's enabled bindings, flags applied:
// the view the API answers and resolved.json holds (the embedded
// apiv1.ResolvedCapabilities, which is all its JSON), and the bundles that
// materializing writes.
type Resolved struct {
	apiv1.ResolvedCapabilities
	Bundles map[string]*Bundle `json:"-"` // by capability name
}

// Resolve merges the enabled items, by capability name. Components gated by
// a flag that is off are left out. Where two capabilities give an
// environment variable different values, or define one MCP server or tool
// name, the first by name is used and a Conflict names both; nothing is
// dropped silently. The result is the same for the same items in any order.
func Resolve(items []Item) Resolved {
	r := Resolved{Bundles: map[string]*Bundle{}, ResolvedCapabilities: apiv1.ResolvedCapabilities{
		Root: Root, Capabilities: []apiv1.ResolvedCapability{}, Tools: []apiv1.ResolvedTool{}, Skills: []apiv1.ResolvedSkill{},
		MCPServers: []apiv1.ResolvedMCPServer{}, Prompts: []apiv1.ResolvedPrompt{}, Dependencies: []apiv1.ResolvedDependency{},
		Env: map[string]string{}, Conflicts: []apiv1.CapabilityConflict{},
	}}
	items = append([]Item(nil), items...)
	sort.SliceStable(items, func(i, j int) bool { return items[i].Binding.Name < items[j].Binding.Name })
	envFrom := map[string]string{}  // variable → the capability whose value is used
	toolFrom := map[string]string{} // tool name → capability
	mcpFrom := map[string]string{}  // MCP server name → capability
	for _, it := range items {
		b := it.Binding
		if !b.Enabled || it.Bundle == nil {
			continue
		}
		m := it.Bundle.Manifest
		dir := Dir(b.Name)
		flags := m.EffectiveFlags(b.Flags)
		r.Bundles[b.Name] = it.Bundle
		r.Capabilities = append(r.Capabilities, apiv1.ResolvedCapability{BindingID: b.ID, Name: b.Name, Version: b.Version,
			Source: string(b.Source), Description: m.Description, Dir: dir, Flags: flags})
		for _, k := range sortedKeys(m.Env) {
			v := m.Env[k]
			if first, ok := envFrom[k]; ok {
				if r.Env[k] != v {
					r.conflict("env", k, first, b.Name, fmt.Sprintf("env %s: %s sets %q, %s sets %q; %s's value is used", k, first, r.Env[k], b.Name, v, first))
				}
				continue
			}
			envFrom[k], r.Env[k] = b.Name, v
		}
		for _, t := range m.Tools {
			if !Active(t.When, flags) {
				continue
			}
			if first, ok := toolFrom[t.Name]; ok {
				r.conflict("tool", t.Name, first, b.Name, fmt.Sprintf("tool %s is defined by %s and %s; %s's is %s/%s", t.Name, first, b.Name, first, BinDir, t.Name))
				continue
			}
			toolFrom[t.Name] = b.Name
			r.Tools = append(r.Tools, apiv1.ResolvedTool{Capability: b.Name, Name: t.Name, Description: t.Description, Path: dir + "/" + t.Path})
		}
		for _, s := range m.Skills {
			if Active(s.When, flags) {
				r.Skills = append(r.Skills, apiv1.ResolvedSkill{Capability: b.Name, Name: s.Name, Description: s.Description, Path: dir + "/" + s.Path})
			}
		}
		for _, s := range m.MCPServers {
			if !Active(s.When, flags) {
				continue
			}
			if first, ok := mcpFrom[s.Name]; ok {
				r.conflict("mcp_server", s.Name, first, b.Name, fmt.Sprintf("MCP server %s is defined by %s and %s; %s's definition is used", s.Name, first, b.Name, first))
				continue
			}
			mcpFrom[s.Name] = b.Name
			r.MCPServers = append(r.MCPServers, mcpServer(b.Name, dir, s))
		}
		for _, p := range m.Prompts {
			if Active(p.When, flags) {
				r.Prompts = append(r.Prompts, apiv1.ResolvedPrompt{Capability: b.Name, Name: p.Name, Description: p.Description, Path: dir + "/" + p.Path})
			}
		}
		for _, d := range m.Dependencies {
			if Active(d.When, flags) {
				r.Dependencies = append(r.Dependencies, apiv1.ResolvedDependency{Capability: b.Name, Name: d.Name, Check: d.Check,
					Install: d.Install, Timeout: int(installTimeout(d.Timeout).Seconds())})
			}
		}
	}
	return r
}

func (r *Resolved) conflict(kind, name, used, other, detail string) {
	r.Conflicts = append(r.Conflicts, apiv1.CapabilityConflict{Kind: kind, Name: name, Capabilities: []string{used, other}, Used: used, Detail: detail})
}

func mcpServer(capability, dir string, s MCPServer) apiv1.ResolvedMCPServer {
	sub := func(v string) string { return strings.ReplaceAll(v, DirVar, dir) }
	subMap := func(m map[string]string) map[string]string {
		if len(m) == 0 {
			return nil
		}
		out := make(map[string]string, len(m))
		for k, v := range m {
			out[k] = sub(v)
		}
		return out
	}
	out := apiv1.ResolvedMCPServer{Capability: capability, Name: s.Name, Transport: s.Transport, Command: sub(s.Command),
		URL: sub(s.URL), Env: subMap(s.Env), Headers: subMap(s.Headers)}
	for _, a := range s.Args {
		out.Args = append(out.Args, sub(a))
	}
	return out
}

// Describe is what the API says of one version of a capability.
func Describe(m Manifest, source sbx.CapabilitySource) apiv1.Capability {
	out := apiv1.Capability{Name: m.Name, Version: m.Version, Description: m.Description, Source: string(source),
		Flags: []apiv1.CapabilityFlag{}, Tools: []string{}, Skills: []string{}, MCPServers: []string{}, Prompts: []string{}, Dependencies: []string{}}
	for _, name := range sortedKeys(m.Flags) {
		out.Flags = append(out.Flags, apiv1.CapabilityFlag{Name: name, Default: m.Flags[name].Default, Description: m.Flags[name].Description})
	}
	for _, t := range m.Tools {
		out.Tools = append(out.Tools, t.Name)
	}
	for _, s := range m.Skills {
		out.Skills = append(out.Skills, s.Name)
	}
	for _, s := range m.MCPServers {
		out.MCPServers = append(out.MCPServers, s.Name)
	}
	for _, p := range m.Prompts {
		out.Prompts = append(out.Prompts, p.Name)
	}
	for _, d := range m.Dependencies {
		out.Dependencies = append(out.Dependencies, d.Name)
	}
	return out
}

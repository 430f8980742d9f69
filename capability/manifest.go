// Package capability is sbx's capabilities: versioned bundles (a directory
// with a capability.yaml manifest) of tools, skills, MCP server definitions,
// agent prompts and dependencies, gated by flags. It parses and checks
// manifests, loads bundles from a directory, an fs.FS or a tar.gz archive
// with safety limits, holds the public catalog shipped in the binary, installs
// bundles of the catalog or an org's inventory on runtimes (through the
// ledger), resolves a runtime's enabled bindings into one merged set with its
// conflicts, and materializes that set in a sandbox.
package capability

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
	"golang.org/x/mod/semver"
	"gopkg.in/yaml.v3"
)

// ManifestFile is the manifest's name at a bundle's root.
const ManifestFile = "capability.yaml"

// Schema is the manifest schema this sbx reads.
const Schema = 1

// Manifest is a bundle's capability.yaml (schema 1). Paths are relative to
// the bundle's root, slash-separated, inside it. A component with When set is
// part of the capability only while that flag is true.
type Manifest struct {
	Schema       int               `yaml:"schema" json:"schema"`
	Name         string            `yaml:"name" json:"name"`
	Version      string            `yaml:"version" json:"version"`
	Description  string            `yaml:"description" json:"description"`
	Flags        map[string]Flag   `yaml:"flags,omitempty" json:"flags,omitempty"`
	Env          map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	Tools        []Component       `yaml:"tools,omitempty" json:"tools,omitempty"`   // executable files, put on the sandbox's PATH (/opt/sbx/bin) under their names
	Skills       []Component       `yaml:"skills,omitempty" json:"skills,omitempty"` // directories holding a SKILL.md
	MCPServers   []MCPServer       `yaml:"mcp_servers,omitempty" json:"mcp_servers,omitempty"`
	Prompts      []Component       `yaml:"prompts,omitempty" json:"prompts,omitempty"` // agent prompts: text files
	Dependencies []Dependency      `yaml:"dependencies,omitempty" json:"dependencies,omitempty"`
}

// Flag is a switch a binding sets; components name it in their When.
type Flag struct {
	Default     bool   `yaml:"default" json:"default"`
	Description string `yaml:"description" json:"description"`
}

// Component is a tool, a skill or a prompt: a named path of the bundle.
type Component struct {
	Name        string `yaml:"name" json:"name"`
	Path        string `yaml:"path" json:"path"`
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	When        string `yaml:"when,omitempty" json:"when,omitempty"`
}

// MCPServer is how an agent starts or reaches an MCP server: a command
// speaking MCP on stdio, or an HTTP endpoint.
type MCPServer struct {
	Name      string            `yaml:"name" json:"name"`
	Transport string            `yaml:"transport" json:"transport"` // stdio or http
	Command   string            `yaml:"command,omitempty" json:"command,omitempty"`
	Args      []string          `yaml:"args,omitempty" json:"args,omitempty"`
	Env       map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	URL       string            `yaml:"url,omitempty" json:"url,omitempty"`
	Headers   map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	When      string            `yaml:"when,omitempty" json:"when,omitempty"`
}

// Dependency is something the capability needs in the sandbox: Check is a
// shell script that exits 0 when it is there; Install, run when the check
// fails, puts it there. Both run in the capability's directory.
type Dependency struct {
	Name    string `yaml:"name" json:"name"`
	Check   string `yaml:"check" json:"check"`
	Install string `yaml:"install,omitempty" json:"install,omitempty"`
	Timeout int    `yaml:"timeout,omitempty" json:"timeout,omitempty"` // seconds the install may take; 0: DefaultInstallTimeout
	When    string `yaml:"when,omitempty" json:"when,omitempty"`
}

// Timeouts of dependencies' scripts.
const (
	CheckTimeout          = time.Minute
	DefaultInstallTimeout = 10 * time.Minute
)

func installTimeout(seconds int) time.Duration {
	if seconds <= 0 {
		return DefaultInstallTimeout
	}
	return time.Duration(seconds) * time.Second
}

// Limits of a manifest.
const (
	maxNameLen        = 64
	maxDescriptionLen = 1024
	maxComponents     = 64 // of each kind
	maxScriptLen      = 16 << 10
	maxInstallTimeout = 3600
)

var (
	namePattern      = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	componentPattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]*$`)
	flagPattern      = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)
	versionPattern   = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+([-+].*)?$`)
)

// ParseManifest reads a capability.yaml strictly (an unknown field is an
// error naming it) and checks it. The error is an sbx.EInvalid whose fields
// name each problem.
func ParseManifest(data []byte) (Manifest, error) {
	var m Manifest
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		if errors.Is(err, io.EOF) {
			return m, sbx.Invalid(ManifestFile, "%s is empty; it needs at least schema, name, version and description", ManifestFile)
		}
		return m, yamlError(err)
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return m, sbx.Invalid(ManifestFile, "%s must hold one YAML document", ManifestFile)
	}
	return m, m.Validate()
}

var (
	unknownField = regexp.MustCompile(`line (\d+): field (\S+) not found in type \S+`)
	typeMismatch = regexp.MustCompile(`line (\d+): cannot unmarshal !!(\w+)(?: (.*))? into (\S+)`)
)

// yamlError rewords yaml.v3's errors so that they name the file, the line
// and the field.
func yamlError(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		return sbx.Invalid(ManifestFile, "%s is not valid YAML: %s", ManifestFile, msg)
	}
	var p problems
	for _, e := range te.Errors {
		if m := unknownField.FindStringSubmatch(e); m != nil {
			p.Add(m[2], "%s line %s: unknown field %q", ManifestFile, m[1], m[2])
		} else if m := typeMismatch.FindStringSubmatch(e); m != nil {
			value := "a YAML " + m[2]
			if m[3] != "" {
				value = m[3] + " is a YAML " + m[2]
			}
			p.Add(ManifestFile, "%s line %s: %s where %s is wanted", ManifestFile, m[1], value, goKind(m[4]))
		} else {
			p.Add(ManifestFile, "%s: %s", ManifestFile, e)
		}
	}
	return p.Err()
}

func goKind(t string) string {
	switch {
	case t == "int":
		return "an integer"
	case t == "bool":
		return "true or false"
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a mapping"
	}
	return "a mapping" // a struct
}

// Validate checks every field of m and reports every problem at once.
func (m Manifest) Validate() error {
	var p problems
	switch {
	case m.Schema == 0:
		p.Add("schema", "%s: schema is required; this sbx reads schema %d", ManifestFile, Schema)
	case m.Schema != Schema:
		p.Add("schema", "%s: schema %d is not supported; this sbx reads schema %d", ManifestFile, m.Schema, Schema)
	}
	if err := CheckName(m.Name); err != nil {
		p.Add("name", "%s: %s", ManifestFile, sbx.ErrorMessage(err))
	}
	if err := CheckVersion(m.Version); err != nil {
		p.Add("version", "%s: %s", ManifestFile, sbx.ErrorMessage(err))
	}
	switch d := strings.TrimSpace(m.Description); {
	case d == "":
		p.Add("description", "%s: description is required: one or two sentences saying what the capability gives an agent", ManifestFile)
	case len(m.Description) > maxDescriptionLen:
		p.Add("description", "%s: description is longer than %d bytes", ManifestFile, maxDescriptionLen)
	}
	for _, name := range sortedKeys(m.Flags) {
		if !flagPattern.MatchString(name) || len(name) > maxNameLen {
			p.Add("flags."+name, "%s: flag name %q must be lowercase letters, digits, '-' or '_', starting with a letter, at most %d bytes", ManifestFile, name, maxNameLen)
		}
	}
	p.env("env", m.Env)
	when := func(field, flag string) {
		if _, ok := m.Flags[flag]; flag != "" && !ok {
			p.Add(field+".when", "%s: %s.when names flag %q, which flags does not declare", ManifestFile, field, flag)
		}
	}
	names := func(kind string, n int, name func(int) string) {
		if n > maxComponents {
			p.Add(kind, "%s: %s may hold at most %d entries", ManifestFile, kind, maxComponents)
		}
		seen := map[string]int{}
		for i := 0; i < n; i++ {
			field, nm := fmt.Sprintf("%s[%d]", kind, i), name(i)
			if !componentPattern.MatchString(nm) || len(nm) > maxNameLen {
				p.Add(field+".name", "%s: %s.name %q must be 1-%d letters, digits, '.', '_' or '-', starting with a letter or digit", ManifestFile, field, nm, maxNameLen)
			} else if j, dup := seen[nm]; dup {
				p.Add(field+".name", "%s: %s.name %q is also the name of %s[%d]", ManifestFile, field, nm, kind, j)
			}
			seen[nm] = i
		}
	}
	components := func(kind string, list []Component) {
		names(kind, len(list), func(i int) string { return list[i].Name })
		for i, c := range list {
			field := fmt.Sprintf("%s[%d]", kind, i)
			p.path(field+".path", c.Path)
			when(field, c.When)
		}
	}
	components("tools", m.Tools)
	components("skills", m.Skills)
	names("mcp_servers", len(m.MCPServers), func(i int) string { return m.MCPServers[i].Name })
	for i, s := range m.MCPServers {
		field := fmt.Sprintf("mcp_servers[%d]", i)
		p.mcpServer(field, s)
		when(field, s.When)
	}
	components("prompts", m.Prompts)
	names("dependencies", len(m.Dependencies), func(i int) string { return m.Dependencies[i].Name })
	for i, d := range m.Dependencies {
		field := fmt.Sprintf("dependencies[%d]", i)
		if strings.TrimSpace(d.Check) == "" {
			p.Add(field+".check", "%s: %s.check is required: a shell command that exits 0 when %s is present", ManifestFile, field, d.Name)
		}
		if len(d.Check) > maxScriptLen || len(d.Install) > maxScriptLen {
			p.Add(field, "%s: %s's check and install scripts may be at most %d bytes each", ManifestFile, field, maxScriptLen)
		}
		if d.Timeout < 0 || d.Timeout > maxInstallTimeout {
			p.Add(field+".timeout", "%s: %s.timeout must be 1 to %d seconds (0 or absent: %d)", ManifestFile, field, maxInstallTimeout, int(DefaultInstallTimeout.Seconds()))
		}
		when(field, d.When)
	}
	return p.Err()
}

func (p *problems) mcpServer(field string, s MCPServer) {
	switch s.Transport {
	case "stdio":
		if strings.TrimSpace(s.Command) == "" {
			p.Add(field+".command", "%s: %s.command is required for transport stdio", ManifestFile, field)
		}
		if s.URL != "" || len(s.Headers) > 0 {
			p.Add(field+".url", "%s: %s has transport stdio: url and headers are for transport http", ManifestFile, field)
		}
		p.env(field+".env", s.Env)
	case "http":
		if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
			p.Add(field+".url", "%s: %s.url %q must be an http:// or https:// URL for transport http", ManifestFile, field, s.URL)
		}
		if s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0 {
			p.Add(field+".command", "%s: %s has transport http: command, args and env are for transport stdio", ManifestFile, field)
		}
	default:
		p.Add(field+".transport", "%s: %s.transport %q must be stdio or http", ManifestFile, field, s.Transport)
	}
}

// env checks an env of the manifest (sbx.EnvFaults), given in field.
func (p *problems) env(field string, env map[string]string) {
	for _, f := range sbx.EnvFaults(env) {
		if f.Name == "" {
			p.Add(field, "%s: %s %s", ManifestFile, field, f.Problem)
		} else {
			p.Add(field+"."+f.Name, "%s: %s: %s", ManifestFile, field, f.Problem)
		}
	}
}

// path checks a path of the manifest: relative, clean, inside the bundle.
// Whether it names what it should is checked with the bundle's files.
func (p *problems) path(field, v string) {
	if msg := badPath(v); msg != "" {
		p.Add(field, "%s: %s %q %s", ManifestFile, field, v, msg)
	}
}

// badPath says what is wrong with a path inside a bundle, or "".
func badPath(v string) string {
	switch {
	case v == "":
		return "is required"
	case strings.HasPrefix(v, "/"):
		return "must be relative to the bundle's root, not absolute"
	case strings.Contains(v, "\\") || strings.ContainsRune(v, 0):
		return "must use '/' as separator and hold no NUL"
	case v == ".." || strings.HasPrefix(v, "../") || strings.Contains(v, "/../") || strings.HasSuffix(v, "/.."):
		return "must stay inside the bundle (no '..')"
	case path.Clean(v) != v || v == ".":
		return "must be a clean path (no '.', '//' or trailing '/')"
	case len(v) > maxPathLen:
		return fmt.Sprintf("is longer than %d bytes", maxPathLen)
	}
	return ""
}

// CheckName checks a capability's name.
func CheckName(name string) error {
	if !namePattern.MatchString(name) || len(name) > maxNameLen {
		return sbx.Invalid("name", "name %q must be 1-%d lowercase letters, digits or '-', starting with a letter or digit (^[a-z0-9][a-z0-9-]*$)", name, maxNameLen)
	}
	return nil
}

// CheckVersion checks a capability's version: a semantic version 2.0,
// MAJOR.MINOR.PATCH with optional -prerelease and +build, without a "v".
func CheckVersion(v string) error {
	if !versionPattern.MatchString(v) || !semver.IsValid("v"+v) {
		return sbx.Invalid("version", "version %q must be a semantic version: MAJOR.MINOR.PATCH, e.g. 1.0.0 or 2.1.0-rc.1", v)
	}
	return nil
}

// CompareVersions orders two valid versions as semantic versions: -1, 0 or 1.
func CompareVersions(a, b string) int { return semver.Compare("v"+a, "v"+b) }

// Newest is the newest of versions: the highest release, or the highest
// pre-release when there is no release; "" when versions is empty.
func Newest(versions []string) string {
	best := ""
	for _, v := range versions {
		switch {
		case best == "":
			best = v
		case (semver.Prerelease("v"+best) != "") != (semver.Prerelease("v"+v) != ""):
			if semver.Prerelease("v"+v) == "" {
				best = v
			}
		case CompareVersions(v, best) > 0:
			best = v
		}
	}
	return best
}

// Active reports whether a component gated by when is part of the capability
// under flags.
func Active(when string, flags map[string]bool) bool { return when == "" || flags[when] }

// EffectiveFlags is m's flags with their defaults, overridden by set.
func (m Manifest) EffectiveFlags(set map[string]bool) map[string]bool {
	out := map[string]bool{}
	for name, f := range m.Flags {
		out[name] = f.Default
	}
	for name, v := range set {
		if _, ok := m.Flags[name]; ok {
			out[name] = v
		}
	}
	return out
}

// CheckFlags refuses flags m does not declare, naming them and m's own.
func (m Manifest) CheckFlags(field string, set map[string]bool) error {
	var p problems
	for _, name := range sortedKeys(set) {
		if _, ok := m.Flags[name]; !ok {
			declared := "it declares none"
			if len(m.Flags) > 0 {
				declared = "its flags: " + strings.Join(sortedKeys(m.Flags), ", ")
			}
			p.Add(field+"."+name, "capability %s %s has no flag %q (%s)", m.Name, m.Version, name, declared)
		}
	}
	return p.Err()
}

// problems collects field errors, with the manifest's shared checks.
type problems struct{ sbx.Problems }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

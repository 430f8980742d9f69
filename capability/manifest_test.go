package capability_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/capability"
)

const goodManifest = `schema: 1
name: demo
version: 1.2.3
description: A demo capability.
flags:
  extra: {default: false, description: The extra tool.}
env:
  DEMO: "1"
tools:
  - {name: hello, path: tools/hello}
  - {name: extra, path: tools/extra, when: extra}
skills:
  - {name: demo-skill, path: skills/demo}
mcp_servers:
  - {name: local, transport: stdio, command: bash, args: ["${CAPABILITY_DIR}/server.sh"], env: {LEVEL: debug}}
  - {name: remote, transport: http, url: "https://mcp.example.com/mcp", headers: {X-Team: ml}}
prompts:
  - {name: reviewer, path: prompts/reviewer.md}
dependencies:
  - {name: sh, check: "command -v sh", install: "true", timeout: 30}
`

func TestParseManifest(t *testing.T) {
	m, err := capability.ParseManifest([]byte(goodManifest))
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "demo" || m.Version != "1.2.3" || len(m.Tools) != 2 || m.MCPServers[1].URL != "https://mcp.example.com/mcp" ||
		m.Dependencies[0].Timeout != 30 || m.Flags["extra"].Description != "The extra tool." || m.Env["DEMO"] != "1" {
		t.Fatalf("parsed %+v", m)
	}
	for _, v := range []string{"0.0.1", "10.20.30", "1.0.0-rc.1", "1.0.0+build.5", "2.0.0-alpha+001"} {
		if err := capability.CheckVersion(v); err != nil {
			t.Errorf("version %s: %v", v, err)
		}
	}
}

// Each bad manifest is refused with a message that names the file and the
// field, and an error field naming it too.
func TestBadManifests(t *testing.T) {
	for _, c := range []struct {
		name, edit, field, want string
	}{
		{"no schema", "schema: 1\n->", "schema", "capability.yaml: schema is required; this sbx reads schema 1"},
		{"schema 2", "schema: 1->schema: 2", "schema", "schema 2 is not supported"},
		{"no name", "name: demo\n->", "name", `name "" must be 1-64 lowercase letters`},
		{"capital name", "name: demo->name: Demo", "name", `capability.yaml: name "Demo" must be`},
		{"name with dot", "name: demo->name: de.mo", "name", `^[a-z0-9][a-z0-9-]*$`},
		{"dash first", "name: demo->name: -demo", "name", `name "-demo"`},
		{"no version", "version: 1.2.3\n->", "version", `capability.yaml: version "" must be a semantic version`},
		{"short version", "version: 1.2.3->version: \"1.2\"", "version", `version "1.2" must be a semantic version: MAJOR.MINOR.PATCH`},
		{"v prefix", "version: 1.2.3->version: v1.2.3", "version", `version "v1.2.3"`},
		{"leading zero", "version: 1.2.3->version: 01.2.3", "version", `version "01.2.3"`},
		{"no description", "description: A demo capability.\n->", "description", "capability.yaml: description is required"},
		{"blank description", "description: A demo capability.->description: \"  \"", "description", "description is required"},
		{"unknown field", "schema: 1->schema: 1\nmcp: {}", "mcp", `capability.yaml line 2: unknown field "mcp"`},
		{"wrong type", "version: 1.2.3->version: [1]", "capability.yaml", "capability.yaml line 3: a YAML seq where a string is wanted"},
		{"not yaml", "schema: 1->schema: [", "capability.yaml", "capability.yaml is not valid YAML"},
		{"absolute tool path", "path: tools/hello->path: /bin/sh", "tools[0].path", `capability.yaml: tools[0].path "/bin/sh" must be relative`},
		{"tool path leaves", "path: tools/hello->path: ../x", "tools[0].path", `tools[0].path "../x" must stay inside the bundle`},
		{"unclean path", "path: skills/demo->path: skills/./demo", "skills[0].path", `skills[0].path "skills/./demo" must be a clean path`},
		{"duplicate tool", "name: extra, path: tools/extra->name: hello, path: tools/extra", "tools[1].name", `tools[1].name "hello" is also the name of tools[0]`},
		{"bad tool name", "name: hello->name: 'he llo'", "tools[0].name", `tools[0].name "he llo" must be`},
		{"unknown flag in when", "when: extra->when: nope", "tools[1].when", `tools[1].when names flag "nope", which flags does not declare`},
		{"bad flag name", "extra: {default->Extra: {default", "flags.Extra", `flag name "Extra"`},
		{"bad env name", "DEMO: \"1\"->1DEMO: \"1\"", "env.1DEMO", `environment variable name "1DEMO"`},
		{"reserved env name", "DEMO: \"1\"->SBX_ACCESS_TOKEN: \"1\"", "env.SBX_ACCESS_TOKEN", "SBX_ACCESS_TOKEN is reserved"},
		{"NUL in env", "DEMO: \"1\"->DEMO: \"a\\0b\"", "env.DEMO", "environment variable DEMO holds a NUL byte"},
		{"long env value", "DEMO: \"1\"->DEMO: \"" + strings.Repeat("v", 32<<10+1) + "\"", "env.DEMO", "environment variable DEMO is longer than 32768 bytes"},
		{"NUL in an MCP env", "LEVEL: debug->LEVEL: \"\\0\"", "mcp_servers[0].env.LEVEL", "environment variable LEVEL holds a NUL byte"},
		{"bad transport", "transport: stdio->transport: sse", "mcp_servers[0].transport", `mcp_servers[0].transport "sse" must be stdio or http`},
		{"stdio without command", "command: bash, ->", "mcp_servers[0].command", "mcp_servers[0].command is required for transport stdio"},
		{"http without url", `url: "https://mcp.example.com/mcp", ->`, "mcp_servers[1].url", `mcp_servers[1].url "" must be an http:// or https:// URL`},
		{"http with command", "transport: http,->transport: http, command: x,", "mcp_servers[1].command", "has transport http: command, args and env are for transport stdio"},
		{"no check", `check: "command -v sh", ->`, "dependencies[0].check", "dependencies[0].check is required"},
		{"timeout too long", "timeout: 30->timeout: 99999", "dependencies[0].timeout", "dependencies[0].timeout must be 1 to 3600 seconds"},
		{"two documents", "schema: 1->schema: 1\n---\nschema: 1", "capability.yaml", "must hold one YAML document"},
	} {
		t.Run(c.name, func(t *testing.T) {
			from, to, _ := strings.Cut(c.edit, "->")
			if !strings.Contains(goodManifest, from) {
				t.Fatalf("the edit %q matches nothing", from)
			}
			_, err := capability.ParseManifest([]byte(strings.Replace(goodManifest, from, to, 1)))
			if sbx.ErrorCode(err) != sbx.EInvalid || !strings.Contains(sbx.ErrorMessage(err), c.want) {
				t.Fatalf("got %v (%s), want invalid containing %q", err, sbx.ErrorCode(err), c.want)
			}
			var e *sbx.Error
			if !errors.As(err, &e) || !hasField(e.Fields, c.field) {
				t.Fatalf("fields %+v do not name %s", e.Fields, c.field)
			}
		})
	}
	if _, err := capability.ParseManifest(nil); !strings.Contains(sbx.ErrorMessage(err), "capability.yaml is empty") {
		t.Fatalf("empty manifest: %v", err)
	}
	// Every problem at once.
	_, err := capability.ParseManifest([]byte("schema: 1\nname: X\nversion: one\n"))
	for _, want := range []string{`name "X"`, `version "one"`, "description is required"} {
		if !strings.Contains(sbx.ErrorMessage(err), want) {
			t.Errorf("%v does not say %s", err, want)
		}
	}
}

func hasField(fields []sbx.FieldError, name string) bool {
	for _, f := range fields {
		if f.Field == name {
			return true
		}
	}
	return false
}

func TestFlagsAndVersions(t *testing.T) {
	m, err := capability.ParseManifest([]byte(goodManifest))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CheckFlags("flags", map[string]bool{"extra": true}); err != nil {
		t.Fatal(err)
	}
	err = m.CheckFlags("flags", map[string]bool{"turbo": true})
	if !strings.Contains(sbx.ErrorMessage(err), `capability demo 1.2.3 has no flag "turbo" (its flags: extra)`) {
		t.Fatalf("unknown flag: %v", err)
	}
	if got := m.EffectiveFlags(nil); len(got) != 1 || got["extra"] {
		t.Fatalf("defaults: %v", got)
	}
	if got := m.EffectiveFlags(map[string]bool{"extra": true, "gone": true}); !got["extra"] || len(got) != 1 {
		t.Fatalf("set: %v", got)
	}
	for _, c := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"1.0.0", "1.10.0", "1.9.0"}, "1.10.0"},
		{[]string{"2.0.0-rc.1", "1.5.0"}, "1.5.0"},
		{[]string{"2.0.0-rc.1", "2.0.0-rc.2"}, "2.0.0-rc.2"},
		{[]string{"1.0.0-beta", "1.0.0"}, "1.0.0"},
	} {
		if got := capability.Newest(c.in); got != c.want {
			t.Errorf("Newest(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

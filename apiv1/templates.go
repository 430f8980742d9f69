package apiv1

import "time"

// Template is a template sandboxes start from (templateID on create):
// every version of it the server keeps, the current one first.
type Template struct {
	ID        string            `json:"id" doc:"A project's template's ID (tpl-…), which a create in any project of the org that sees it may name; the name of one of the server's own."`
	Name      string            `json:"name" doc:"What a create names as templateID: the server's own templates by every key, a project's by its keys."`
	ProjectID string            `json:"projectID,omitempty" doc:"The project whose template it is; absent for the server's own, which every key may use."`
	Version   string            `json:"version,omitempty" doc:"The current version: what a create starts from now; absent until a project's template's first build is ready."`
	Versions  []TemplateVersion `json:"versions" doc:"Every version kept, the current one first, then newest to oldest: older ones stay while sandboxes and snapshots lie on them."`
	Tags      map[string]string `json:"tags" doc:"Each tag and the version it names: a create of NAME:TAG starts from that version."`
}

// TemplateVersion is one built version of a template.
type TemplateVersion struct {
	Version   string    `json:"version"`
	Current   bool      `json:"current"`
	Source    string    `json:"source" doc:"What it was built from: a Debian suite and mirror, an image reference, or the template it derives from."`
	Packages  []string  `json:"packages,omitempty"`
	StartCmd  string    `json:"startCmd,omitempty" doc:"Started in the background by the agent when one of its sandboxes boots."`
	User      string    `json:"user,omitempty" doc:"The default user of its sandboxes' commands, PTYs and new files; empty: root."`
	Ports     []int     `json:"ports,omitempty" doc:"The ports its sandboxes serve, listed with their preview URLs."`
	SizeBytes int64     `json:"sizeBytes" doc:"Its tree on disk (a file linked from another template's tree counts in both)."`
	CreatedAt time.Time `json:"createdAt"`
}

// TemplateList is every template of the server.
type TemplateList struct {
	Items []Template `json:"items"`
}

// CreateTemplateRequest is the body of POST /api/v1/templates: a recipe
// that builds a template of the key's project, in a sandbox.
type CreateTemplateRequest struct {
	Name     string            `json:"name" pattern:"^[a-z0-9._-]{1,64}$" doc:"Unique among the project's templates, and none of the server's own; not beginning tpl-. Building a name the project has makes a new version of it."`
	Base     string            `json:"base,omitempty" doc:"The template the build starts from: one of the server's own or the project's (default base). Not with image."`
	Image    *Image            `json:"image,omitempty" doc:"An OCI image the build starts from, in place of base; its credentials are used for the pull and not kept."`
	Steps    []RecipeStep      `json:"steps,omitempty" maxItems:"100" doc:"Run in order, as root, in the build's sandbox."`
	Env      map[string]string `json:"env,omitempty" doc:"The env of the template's sandboxes' commands and PTYs (in /etc/profile.d, which their login shells read)."`
	Workdir  string            `json:"workdir,omitempty" doc:"The default working directory of its sandboxes' commands; default the base's."`
	User     string            `json:"user,omitempty" doc:"The default user of its sandboxes' commands, PTYs and new files; default the base's."`
	Start    string            `json:"start,omitempty" doc:"A command line the agent starts in the background when one of its sandboxes boots; default the base's."`
	Ports    []int             `json:"ports,omitempty" doc:"The ports its sandboxes serve; default the base's."`
	Ready    *RecipeReady      `json:"ready,omitempty" doc:"When the start command has made its sandboxes ready: checked in the build's sandbox after the steps (a check that does not pass fails the build); then the new version's ready snapshot is made, which creates of the default size restore instead of booting."`
	CPU      *float64          `json:"cpu,omitempty" doc:"The build sandbox's CPUs (as a create's)."`
	MemoryMB *int64            `json:"memoryMB,omitempty" doc:"The build sandbox's memory (as a create's)."`
	DiskMB   *int64            `json:"diskMB,omitempty" doc:"The build sandbox's writable layer: what the steps may add (as a create's)."`
	Timeout  int64             `json:"timeout,omitempty" minimum:"0" maximum:"7200" doc:"Seconds the whole build may take; default 1800."`
}

// RecipeStep is one step of a recipe: exactly one of packages, run and file.
type RecipeStep struct {
	Packages []string    `json:"packages,omitempty" doc:"Installed with the base's own package manager: apt-get, apk, dnf or yum."`
	Run      string      `json:"run,omitempty" doc:"A command line, run by bash -l -c (sh without bash) as root in /; a non-zero exit fails the build."`
	File     *RecipeFile `json:"file,omitempty"`
}

// RecipeFile is a file a recipe writes, as root, its directories made.
type RecipeFile struct {
	Path    string `json:"path" doc:"An absolute path."`
	Content []byte `json:"content" doc:"The file's bytes, base64."`
	Mode    string `json:"mode,omitempty" pattern:"^0?[0-7]{3}$" doc:"Octal permissions, default 0644."`
}

// TemplateBuild is one build of a project's template.
type TemplateBuild struct {
	ID         string     `json:"id"`
	TemplateID string     `json:"templateID" doc:"The template's ID (tpl-…)."`
	Template   string     `json:"template" doc:"The template's name."`
	State      string     `json:"state" enum:"queued,building,ready,failed"`
	Step       int        `json:"step" doc:"The step it is at, or failed at: 1 to steps; 0 before the first and after the last."`
	Steps      int        `json:"steps"`
	SandboxID  string     `json:"sandboxID,omitempty" doc:"The sbx UUID of the sandbox it runs in, billed as any."`
	Version    string     `json:"version,omitempty" doc:"The version it made, once ready."`
	Error      string     `json:"error,omitempty" doc:"Why it failed: the step and its output's tail."`
	CreatedAt  time.Time  `json:"createdAt"`
	StartedAt  *time.Time `json:"startedAt,omitempty"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
}

// TemplateBuildList is a template's builds, newest first.
type TemplateBuildList struct {
	Items []TemplateBuild `json:"items"`
}

// BuildLogLine is one line of a build's log.
type BuildLogLine struct {
	Seq  int64     `json:"seq" doc:"From 1; after=seq reads on from it."`
	Time time.Time `json:"time"`
	Text string    `json:"text"`
}

// BuildLogPage is a build's log lines after a point.
type BuildLogPage struct {
	Lines []BuildLogLine `json:"lines"`
}

// TemplateCatalog is the server's curated catalog of templates, by
// category, for the create wizard.
type TemplateCatalog struct {
	Categories []CatalogCategory `json:"categories"`
}

// CatalogCategory is one category of the catalog.
type CatalogCategory struct {
	Name      string            `json:"name"`
	Templates []CatalogTemplate `json:"templates"`
}

// CatalogTemplate is a template of the catalog: what it holds, and whether
// the server has built it (only a built one starts sandboxes; the operator
// builds it with sbx template build NAME).
type CatalogTemplate struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Packages    []string `json:"packages"`
	Built       bool     `json:"built"`
	Version     string   `json:"version,omitempty" doc:"The built template's current version."`
	SizeBytes   int64    `json:"sizeBytes,omitempty" doc:"The built template's current version on disk."`
}

// TagTemplateRequest is the body of PUT /api/v1/templates/{template}/tags/{tag}.
type TagTemplateRequest struct {
	Version string `json:"version,omitempty" doc:"The version the tag names; default the current one."`
}

// RecipeReady is a recipe's readiness check: a command that exits 0, or a
// port something listens on.
type RecipeReady struct {
	Command  string   `json:"command,omitempty"`
	Port     int      `json:"port,omitempty" minimum:"1" maximum:"65535"`
	Timeout  int64    `json:"timeout,omitempty" minimum:"0" maximum:"1800" doc:"Seconds to wait for it; default 120."`
	WarmCode []string `json:"warmCode,omitempty" doc:"Languages (python, bash, javascript) whose default code context starts before the ready snapshot is taken: warm in the sandboxes that restore it."`
}

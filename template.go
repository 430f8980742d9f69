package sbx

import (
	"context"
	"time"
)

// TemplateInfo is a template as its provider keeps it: every version of
// it still kept, the one new sandboxes start from first, then the others
// from newest to oldest (sandboxes, snapshots and checkpoints lie on them).
type TemplateInfo struct {
	ID        string // a project's template's (ProjectTemplate.ID); the name of one of the server's own
	Name      string
	ProjectID string // the project whose template it is; "" for one of the server's own, which every key may use
	Versions  []TemplateVersion
	Tags      map[string]string // tag → the version it names (a create of NAME:TAG starts from it)
}

// TemplateVersion is one built version of a template.
type TemplateVersion struct {
	Version   string
	Current   bool // the version new sandboxes start from
	Source    string
	Packages  []string
	StartCmd  string
	User      string // the default user of its sandboxes' commands; empty: root
	Ports     []int
	SizeBytes int64 // its tree on disk
	Created   time.Time
}

// TemplateKeeper is implemented by providers that keep templates of their
// own: they list them and remove one, every version of it. Whether anything
// still stands on a template is the ledger's to say (lifecycle asks it
// before RemoveTemplate).
type TemplateKeeper interface {
	Templates(ctx context.Context) ([]TemplateInfo, error)
	// RemoveTemplate removes every version of the template; ENotFound when
	// there is none.
	RemoveTemplate(ctx context.Context, name string) error
}

// TemplateUsers is what stands on a template: sandboxes that are not over
// (a paused or hibernated one wakes on its tree, a warm pool's members
// count) and snapshots that are not deleted, named by their public IDs.
type TemplateUsers struct {
	Sandboxes []string
	Snapshots []string
}

// ProjectTemplate is a template a project built through the API, from a
// recipe run in a sandbox: its ID names its tree on the provider (IDs
// begin "tpl-", which no host-built template's name may), its Name is
// unique among the project's templates that are not deleted and is never
// a public template's.
type ProjectTemplate struct {
	ID          string
	OrgID       string
	WorkspaceID string
	ProjectID   string
	Name        string
	Recipe      []byte // the recipe's JSON, as the last build took it (without credentials)
	Version     string // the version creates start from; "" until a build is ready
	CreatedAt   time.Time
	UpdatedAt   time.Time
	DeletedAt   time.Time // zero until deleted
}

// TemplateIDPrefix begins every ProjectTemplate's ID.
const TemplateIDPrefix = "tpl-"

// BuildState is where a template's build is: queued, building, then ready
// or failed.
type BuildState string

// The build states.
const (
	BuildQueued   BuildState = "queued"
	BuildBuilding BuildState = "building"
	BuildReady    BuildState = "ready"
	BuildFailed   BuildState = "failed"
)

// TemplateBuild is one build of a project's template: the sandbox it ran
// in (billed as any), the step it is at (1-based; 0 before the first), and
// how it ended: the version it made, or the error naming the step that
// failed and its output's tail.
type TemplateBuild struct {
	ID         string
	TemplateID string
	OrgID      string
	State      BuildState
	Step       int
	Steps      int
	SandboxID  string // the build sandbox's sbx UUID
	Version    string
	Error      string
	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
}

// BuildLogLine is one line of a build's log, numbered from 1.
type BuildLogLine struct {
	Seq  int64
	At   time.Time
	Text string
}

// TemplateMeta is what a published template says of its sandboxes.
type TemplateMeta struct {
	Source   string
	StartCmd string
	User     string
	Workdir  string
	Ports    []int
}

// TemplatePublisher is implemented by providers that turn a sandbox's
// files into a template: PublishTemplate lays the writable layer of the
// running sandbox behind h over its template's tree and publishes that as
// a new version of template name (made if new), with meta; it answers the
// version.
type TemplatePublisher interface {
	PublishTemplate(ctx context.Context, h Handle, name string, meta TemplateMeta) (string, error)
}

// CatalogEntry is a template of a provider's curated catalog, which its
// operator builds with one command: its name, category, description and
// packages.
type CatalogEntry struct {
	Name        string
	Category    string
	Description string
	Packages    []string
}

// Cataloger is implemented by providers with a curated catalog of
// templates.
type Cataloger interface {
	Catalog() []CatalogEntry
}

package sbx

import (
	"context"
	"time"
)

// TemplateInfo is a template as its provider keeps it: every version of
// it still kept, the one new sandboxes start from first, then the others
// from newest to oldest (sandboxes, snapshots and checkpoints lie on them).
type TemplateInfo struct {
	Name     string
	Versions []TemplateVersion
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

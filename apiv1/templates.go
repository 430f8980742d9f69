package apiv1

import "time"

// Template is a template sandboxes start from (templateID on create):
// every version of it the server keeps, the current one first.
type Template struct {
	Name     string            `json:"name" doc:"What a create names as templateID."`
	Version  string            `json:"version" doc:"The current version: what a create starts from now."`
	Versions []TemplateVersion `json:"versions" doc:"Every version kept, the current one first, then newest to oldest: older ones stay while sandboxes and snapshots lie on them."`
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

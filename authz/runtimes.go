package authz

import "github.com/sbxdev/sbx"

// Runtimes. A project's key reaches only its project's runtime (and what
// hangs off it: its sandbox, its sessions); every other key reaches each
// runtime of the workspaces it reaches.

// ReachRuntime refuses c runtime rt outside its reach, with the not-found a
// lookup of a runtime that is not there answers, so that a project's key
// learns nothing of the runtimes beside its own.
func ReachRuntime(c sbx.Caller, rt sbx.Runtime) error {
	if c.OrgWide() || rt.ProjectID == c.Key.ProjectID {
		return nil
	}
	return sbx.Errorf(sbx.ENotFound, "runtime %s not found in this workspace", rt.ID)
}

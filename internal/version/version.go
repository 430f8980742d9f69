// Package version says which sbx a binary is, from what the Go toolchain
// stamped into it (runtime/debug.ReadBuildInfo): the main module's version
// (a tag, or a pseudo-version made from the VCS revision) and the revision,
// its time and whether the tree had uncommitted changes.
package version

import (
	"runtime/debug"
	"sync"

	"github.com/sbxdev/sbx/apiv1"
)

// Get describes this binary. A binary built without module information
// (go run of a file, a stripped build) is version "(devel)".
var Get = sync.OnceValue(func() apiv1.Version {
	v := apiv1.Version{Version: "(devel)"}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Go = info.GoVersion
	if info.Main.Version != "" {
		v.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
})

// Package version says which sbx a binary is, from what the Go toolchain
// stamped into it (runtime/debug.ReadBuildInfo): the main module's version
// (a tag, or a pseudo-version made from the VCS revision) and the revision,
// its time and whether the tree had uncommitted changes.
package version

import (
	"runtime/debug"
	"strings"
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

// Tag is version v as an image tag: the characters a tag may not hold
// (a pseudo-version's "+incompatible", "(devel)"'s parentheses) become
// "-", with none at either end, at most 128 characters ("(devel)" is
// "devel").
func Tag(v string) string {
	b := []byte(v)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			b[i] = '-'
		}
	}
	tag := strings.Trim(string(b), ".-")
	if len(tag) > 128 {
		tag = tag[:128]
	}
	if tag == "" {
		return "devel"
	}
	return tag
}

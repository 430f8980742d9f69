package agent

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// defaultPath is PATH for commands when the agent's environment has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// workingDir resolves a command's cwd, which must be an existing directory.
func (a *Agent) workingDir(cwd string) (string, error) {
	dir := a.resolve(cwd)
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return "", invalidField("cwd", "cwd %s: %v", short(dir), unwrapPath(err))
	case !fi.IsDir():
		return "", invalidField("cwd", "cwd %s: not a directory", short(dir))
	}
	return dir, nil
}

// childEnv is a command's environment: the agent's (less its token), the
// user's HOME, USER and LOGNAME, then what the request adds. A command run as
// the agent's own user keeps the agent's HOME when it has one, as the
// sandbox's env may set it.
func (a *Agent) childEnv(acct *account, extra map[string]string) ([]string, error) {
	for k := range extra {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.Contains(extra[k], "\x00") {
			return nil, invalidField("env", "env: %s is not a valid variable", quote(k))
		}
	}
	env := make([]string, 0, 64)
	index := map[string]int{}
	set := func(k, v string) {
		if i, ok := index[k]; ok {
			env[i] = k + "=" + v
			return
		}
		index[k] = len(env)
		env = append(env, k+"="+v)
	}
	set("PATH", defaultPath)
	for _, kv := range *a.env.Load() {
		if k, v, _ := strings.Cut(kv, "="); k != TokenEnv {
			set(k, v)
		}
	}
	if _, inherited := index["HOME"]; !inherited || acct.cred != nil {
		set("HOME", acct.home)
	}
	set("USER", acct.name)
	set("LOGNAME", acct.name)
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		set(k, extra[k])
	}
	return env, nil
}

// lookPath finds an executable as the command's own PATH would: a name
// with a slash is taken as it is (relative to cwd).
func lookPath(file string, env []string, cwd string) (string, error) {
	if file == "" {
		return "", invalid("args[0] is empty")
	}
	if strings.Contains(file, "/") {
		return file, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(cwd, dir)
		}
		p := filepath.Join(dir, file)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errNotOnPath
}

// resolve makes a path absolute, relative to the working directory, and clean.
func (a *Agent) resolve(p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(a.workdir, p)
	}
	return filepath.Clean(p)
}

// replaceEnv is a restored sandbox's env taking the place of its source's:
// the variables named in unset go, those of set are added or replaced.
func (a *Agent) replaceEnv(set map[string]string, unset []string) {
	drop := map[string]bool{}
	for _, k := range unset {
		drop[k] = true
	}
	for k := range set {
		drop[k] = true
	}
	var env []string
	for _, kv := range *a.env.Load() {
		if k, _, _ := strings.Cut(kv, "="); !drop[k] {
			env = append(env, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		env = append(env, k+"="+set[k])
	}
	a.env.Store(&env)
}

package sbx

import (
	"fmt"
	"regexp"
	"strings"
)

// AccessTokenEnv is the environment variable that hands a sandbox's agent
// its access token at boot; the agent removes it, so commands never see it.
// No env a user gives (a sandbox's, a runtime's, a secret's, a capability's)
// may set it.
const AccessTokenEnv = "SBX_ACCESS_TOKEN"

// Limits on the env a user gives a sandbox, which every exec in it carries.
const (
	MaxEnvVars       = 256      // variables in one env given (a request's, a manifest's)
	MaxEnvValueBytes = 32 << 10 // one value
	MaxEnvBytes      = 1 << 20  // a sandbox's whole env, from every source: Linux refuses an exec whose env passes a quarter of an 8 MiB stack
)

// envNamePattern is what an environment variable's name looks like.
var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// EnvNameProblem says what is wrong with name as the name of an environment
// variable a user gives a sandbox; "" when nothing is.
func EnvNameProblem(name string) string {
	switch {
	case !envNamePattern.MatchString(name):
		return fmt.Sprintf("environment variable name %q must be letters, digits and '_', not starting with a digit", cut(name))
	case name == AccessTokenEnv:
		return fmt.Sprintf("%s is reserved: it hands the sandbox's agent its access token", name)
	}
	return ""
}

// EnvProblem says what is wrong with name=value as an environment variable a
// user gives a sandbox; "" when nothing is.
func EnvProblem(name, value string) string {
	if problem := EnvNameProblem(name); problem != "" {
		return problem
	}
	switch {
	case len(value) > MaxEnvValueBytes:
		return fmt.Sprintf("environment variable %s is longer than %d bytes", name, MaxEnvValueBytes)
	case strings.ContainsRune(value, 0):
		return fmt.Sprintf("environment variable %s holds a NUL byte", name)
	}
	return ""
}

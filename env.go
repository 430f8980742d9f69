package sbx

import (
	"fmt"
	"regexp"
)

// AccessTokenEnv is the environment variable that hands a sandbox's agent
// its access token at boot; the agent removes it, so commands never see it.
// No env a user gives (a sandbox's, a runtime's, a secret's, a capability's)
// may set it.
const AccessTokenEnv = "SBX_ACCESS_TOKEN"

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

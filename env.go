package sbx

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
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
	if problem := EnvValueProblem(value); problem != "" {
		return "environment variable " + name + " " + problem
	}
	return ""
}

// EnvValueProblem says what is wrong with value as the value of an
// environment variable a user gives a sandbox (its own, or a secret's), as
// the rest of a sentence about it ("is longer than 32768 bytes"); "" when
// nothing is.
func EnvValueProblem(value string) string {
	switch {
	case len(value) > MaxEnvValueBytes:
		return fmt.Sprintf("is longer than %d bytes", MaxEnvValueBytes)
	case strings.ContainsRune(value, 0):
		return "holds a NUL byte"
	}
	return ""
}

// EnvFault is one thing wrong with an env a user gives: Name is the
// variable's, or "" when the fault is the env's as a whole.
type EnvFault struct{ Name, Problem string }

// EnvFaults says what is wrong with env as one set of environment variables
// a user gives a sandbox (a request's, a runtime's, a manifest's): first the
// whole, when it holds more than MaxEnvVars ("may hold at most 256
// variables", the rest of a sentence naming the env), then each variable
// EnvProblem refuses, in name order. Every surface that takes an env checks
// it with this, and words the faults as its own fields.
func EnvFaults(env map[string]string) []EnvFault {
	var faults []EnvFault
	if len(env) > MaxEnvVars {
		faults = append(faults, EnvFault{Problem: fmt.Sprintf("may hold at most %d variables", MaxEnvVars)})
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if problem := EnvProblem(k, env[k]); problem != "" {
			faults = append(faults, EnvFault{Name: k, Problem: problem})
		}
	}
	return faults
}

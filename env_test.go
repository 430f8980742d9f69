package sbx_test

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

// Every surface words EnvFaults as its own fields; what they find is one
// rule.
func TestEnvFaults(t *testing.T) {
	many := map[string]string{}
	for i := range sbx.MaxEnvVars + 1 {
		many["V"+strings.Repeat("_", i)] = "x"
	}
	for _, c := range []struct {
		env  map[string]string
		want []sbx.EnvFault
	}{
		{nil, nil},
		{map[string]string{"A": "1", "_b9": ""}, nil},
		{map[string]string{"B": "a\x00b", "9A": "1", "A": strings.Repeat("v", sbx.MaxEnvValueBytes+1), sbx.AccessTokenEnv: "x"}, []sbx.EnvFault{
			{"9A", `environment variable name "9A" must be letters, digits and '_', not starting with a digit`},
			{"A", "environment variable A is longer than 32768 bytes"},
			{"B", "environment variable B holds a NUL byte"},
			{sbx.AccessTokenEnv, "SBX_ACCESS_TOKEN is reserved: it hands the sandbox's agent its access token"},
		}},
		{many, []sbx.EnvFault{{"", "may hold at most 256 variables"}}},
	} {
		if got := sbx.EnvFaults(c.env); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%d variables: %q, want %q", len(c.env), got, c.want)
		}
	}
	if got := sbx.EnvValueProblem(strings.Repeat("v", sbx.MaxEnvValueBytes)); got != "" {
		t.Errorf("a value of the largest size: %q", got)
	}
}

// The API document states the rule of a secret's name as a pattern: it is
// EnvNameProblem's (which also reserves the access token's name).
func TestSecretNamePatternIsTheEnvNameRule(t *testing.T) {
	f, _ := reflect.TypeFor[apiv1.SetSecretRequest]().FieldByName("Name")
	pattern := f.Tag.Get("pattern")
	for _, name := range []string{"A", "_", "a_9", "9a", "", "A-B", "A.B", "É", "A B"} {
		matches := regexp.MustCompile(pattern).MatchString(name)
		if ok := sbx.EnvNameProblem(name) == ""; ok != matches {
			t.Errorf("%q: EnvNameProblem accepts it %v, apiv1's pattern %q %v", name, ok, pattern, matches)
		}
	}
}

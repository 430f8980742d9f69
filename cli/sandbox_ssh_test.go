package cli

import (
	"strings"
	"testing"
)

// ssh's askpass: the token answers the gateway's question and its password
// prompt, never another host's (a jump host's) nor a question for a person.
func TestAskpassAnswersTheGatewayOnly(t *testing.T) {
	t.Setenv(askpassEnv, "1")
	t.Setenv(tokenEnv, "tok")
	t.Setenv(loginEnv, "ibox@127.0.0.1")
	for prompt, want := range map[string]string{
		"sbx token: ":                       "tok\n",
		"ibox@127.0.0.1's password: ":       "tok\n",
		"admin@bastion.example's password:": "",
		"Password:":                         "",
		"Are you sure you want to continue connecting (yes/no)? ": "",
	} {
		var out strings.Builder
		code, ran := askpass([]string{prompt}, &out)
		if !ran || out.String() != want || (want == "") != (code == 1) {
			t.Errorf("%q: answered %q (exit %d, ran %v), want %q", prompt, out.String(), code, ran, want)
		}
	}
	t.Setenv(askpassEnv, "")
	if _, ran := askpass([]string{"sbx token: "}, &strings.Builder{}); ran {
		t.Error("answered without being ssh's askpass")
	}
}

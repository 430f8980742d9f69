package strictjson

import (
	"errors"
	"strings"
	"testing"
	"time"
)

type inner struct {
	Name string `json:"name"`
}

type body struct {
	Cmd   string            `json:"cmd,omitempty"`
	Cols  uint16            `json:"cols"`
	Env   map[string]string `json:"env,omitempty"`
	Items []inner           `json:"items,omitempty"`
	In    inner             `json:"in"`
	Opt   *inner            `json:"opt,omitempty"`
	At    time.Time         `json:"at"`
	Skip  string            `json:"-"`
}

func TestDecodeRefuses(t *testing.T) {
	long := strings.Repeat("x", 1000)
	for _, c := range []struct{ body, field, want string }{
		{``, "", "empty"},
		{`null`, "", "must be a JSON object, not null"},
		{`[]`, "", "not an array"},
		{`"cmd"`, "", "not a string"},
		{`{"CMD":"ls"}`, "CMD", `unknown field "CMD"`},
		{`{"Cmd":"ls"}`, "Cmd", `unknown field "Cmd"`},
		{`{"Skip":"x"}`, "Skip", `unknown field "Skip"`},
		{`{"cmd":"ls","nope":1}`, "nope", `unknown field "nope"`},
		{`{"items":[{"name":"a"},{"NAME":"b"}]}`, "items[1].NAME", `unknown field "items[1].NAME"`},
		{`{"in":{"x":1}}`, "in.x", `unknown field "in.x"`},
		{`{"in":null}`, "in", `field "in" must be an object, not null`},
		{`{"cols":"80"}`, "cols", `field "cols" must be an integer from 0 to 65535, not a string`},
		{`{"cols":70000}`, "cols", `not the number 70000`},
		{`{"cmd":1}`, "cmd", `field "cmd" must be a string, not a number`},
		{`{"cmd":"ls"} {}`, "", "nothing after it"},
		{`{"cmd":"ls"}}`, "", "nothing after it"},
		{`{"cmd":"ls"`, "", "ends too early"},
		{`{"cmd":x}`, "", "not valid JSON"},
		{`{"` + long + `":1}`, "", "unknown field"},
		{`{"cols":1` + strings.Repeat("0", 1000) + `}`, "cols", "…"},
	} {
		var v body
		err := Decode([]byte(c.body), &v)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%.40s: %v, want an *Error", c.body, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || (c.field != "" && e.Problems[0].Field != c.field) {
			t.Errorf("%.40s: %+v, want %q on field %q", c.body, e.Problems, c.want, c.field)
		}
		if len(err.Error()) > 3*MaxEcho+100 || strings.Contains(err.Error(), strings.Repeat("x", MaxEcho+1)) || strings.Contains(err.Error(), strings.Repeat("0", MaxEcho+1)) {
			t.Errorf("%.40s: echoes too much: %d bytes", c.body, len(err.Error()))
		}
	}
}

func TestDecodeAccepts(t *testing.T) {
	var v body
	err := Decode([]byte(` {"cmd":"ls","cols":80,"env":{"A":"1","a":"2"},"items":[{"name":"n"}],"in":{},"opt":null,"at":"2024-01-02T03:04:05Z"} `), &v)
	if err != nil || v.Cmd != "ls" || v.Cols != 80 || v.Env["a"] != "2" || v.Items[0].Name != "n" || v.At.Year() != 2024 {
		t.Errorf("%+v, %v", v, err)
	}
}

func TestQuote(t *testing.T) {
	if got := Quote("short"); got != `"short"` {
		t.Errorf("%s", got)
	}
	got := Quote(strings.Repeat("é", 100))
	if !strings.HasSuffix(got, "…") || len(got) > MaxEcho+6 {
		t.Errorf("%s (%d bytes)", got, len(got))
	}
}

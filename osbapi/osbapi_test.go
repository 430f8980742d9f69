package osbapi

import (
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/lifecycle"
)

// Resource limits are Kubernetes quantities, read into sbx's sizes; what
// sbx does not size by is refused by name.
func TestResources(t *testing.T) {
	var p sbx.Problems
	var ask lifecycle.Ask
	resources(&p, "resourceLimits", map[string]string{"cpu": "500m", "memory": "2Gi", "ephemeral-storage": "1G", "gpu": "1"}, &ask)
	if err := p.Err(); err != nil || *ask.CPU != 0.5 || *ask.MemoryMB != 2048 || *ask.DiskMB != 954 || ask.GPU.Count != 1 {
		t.Fatalf("%v %+v", err, ask)
	}
	for _, c := range []struct{ in, want string }{
		{"cpu=0", "resourceLimits.cpu"}, {"cpu=lots", "resourceLimits.cpu"}, {"memory=2Qi", "resourceLimits.memory"},
		{"memory=-1Gi", "resourceLimits.memory"}, {"pids=100", "resourceLimits.pids"}, {"gpu=half", "resourceLimits.gpu"},
	} {
		k, v, _ := strings.Cut(c.in, "=")
		var p sbx.Problems
		resources(&p, "resourceLimits", map[string]string{k: v}, &lifecycle.Ask{})
		if err := p.Err(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want it refused naming %s", c.in, err, c.want)
		}
	}
	for in, want := range map[string]int64{"512Mi": 512, "1Gi": 1024, "1048576": 1, "1.5Gi": 1536, "1M": 1} {
		if got, err := megabytes(in); err != nil || got != want {
			t.Errorf("%s: %d %v, want %d", in, got, err, want)
		}
	}
}

// A network policy is an allow list (deny by default) or a deny list
// (allow by default); an empty one allows everything.
func TestEgress(t *testing.T) {
	for _, c := range []struct {
		name    string
		in      networkPolicy
		want    sbx.Egress
		refused string
	}{
		{name: "empty", want: sbx.Egress{Mode: sbx.EgressInternet}},
		{name: "deny all", in: networkPolicy{DefaultAction: "deny"}, want: sbx.Egress{Mode: sbx.EgressNone}},
		{name: "allow list", in: networkPolicy{DefaultAction: "deny", Egress: []networkRule{{"allow", "pypi.org"}}},
			want: sbx.Egress{Mode: sbx.EgressAllow, Allow: []string{"pypi.org"}}},
		{name: "deny list", in: networkPolicy{DefaultAction: "allow", Egress: []networkRule{{"deny", "bad.example.com"}}},
			want: sbx.Egress{Mode: sbx.EgressInternet, Deny: []string{"bad.example.com"}}},
		{name: "bad action", in: networkPolicy{DefaultAction: "deny", Egress: []networkRule{{"maybe", "x.com"}}}, refused: "networkPolicy.egress[0].action"},
		{name: "bad default", in: networkPolicy{DefaultAction: "drop"}, refused: "networkPolicy.defaultAction"},
		{name: "rules without a default", in: networkPolicy{Egress: []networkRule{{"allow", "x.com"}}}, refused: "networkPolicy.defaultAction"},
	} {
		var p sbx.Problems
		got := egress(&p, c.in)
		err := p.Err()
		if c.refused != "" {
			if err == nil || !strings.Contains(err.Error(), c.refused) {
				t.Errorf("%s: %v, want it refused naming %s", c.name, err, c.refused)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v %v, want %+v", c.name, got, err, c.want)
		}
	}
}

// A create names every field sbx cannot honour, and takes the SDKs'
// defaults (the idle entrypoint, secureAccess false, empty extensions).
func TestAskRefusesByName(t *testing.T) {
	s := &Server{}
	r := httptest.NewRequest("POST", "/v1/sandboxes", nil)
	yes := true
	ask, err := s.ask(r, sbx.Caller{}, createRequest{Image: &imageSpec{URI: "docker.io/library/python:3.11", Auth: &imageAuth{"u", "p"}},
		Entrypoint: idleEntrypoint, SecureAccess: new(bool), Extensions: map[string]string{}, ResourceLimits: map[string]string{"cpu": "1", "memory": "2Gi"},
		Volumes: []volume{{Name: "data", PVC: &pvc{ClaimName: "data", CreateIfNotExists: &yes}, MountPath: "/data", ReadOnly: true}}})
	if err != nil || ask.Image.Ref != "docker.io/library/python:3.11" || ask.Image.Username != "u" || !ask.WaitReady ||
		!reflect.DeepEqual(ask.Volumes, []lifecycle.VolumeAsk{{Name: "data", Path: "/data", ReadOnly: true}}) {
		t.Fatalf("%+v %v", ask, err)
	}
	_, err = s.ask(r, sbx.Caller{}, createRequest{SnapshotID: "snap", Entrypoint: []string{"python", "app.py"},
		ResourceRequests: map[string]string{"cpu": "1"}, CredentialProxy: &credentialProxy{Enabled: true},
		Extensions: map[string]string{"poolRef": "p"}, Platform: &platform{OS: "windows", Arch: "amd64"},
		Volumes: []volume{{Name: "h", Host: []byte(`{"path":"/x"}`), MountPath: "/x", SubPath: "a"}}})
	for _, field := range []string{"snapshotId", "entrypoint", "resourceRequests", "credentialProxy.enabled", "extensions.poolRef", "platform", "volumes[0].host", "volumes[0].subPath"} {
		if err == nil || !strings.Contains(err.Error(), field) && !hasField(err, field) {
			t.Errorf("%v does not name %s", err, field)
		}
	}
	if _, err := s.ask(r, sbx.Caller{}, createRequest{}); !hasField(err, "image.uri") {
		t.Errorf("a create without an image: %v", err)
	}
}

func hasField(err error, field string) bool {
	e, ok := err.(*sbx.Error)
	if !ok {
		return false
	}
	for _, f := range e.Fields {
		if f.Field == field {
			return true
		}
	}
	return false
}

// sbx's states and intents map onto OpenSandbox's states.
func TestStatusOf(t *testing.T) {
	for _, c := range []struct {
		sb   sbx.Sandbox
		want string
	}{
		{sbx.Sandbox{State: sbx.StateStarting}, statePending},
		{sbx.Sandbox{State: sbx.StateRunning}, stateRunning},
		{sbx.Sandbox{State: sbx.StateRunning, Intent: sbx.IntentPausing}, statePausing},
		{sbx.Sandbox{State: sbx.StatePaused, PauseReason: sbx.PauseUser}, statePaused},
		{sbx.Sandbox{State: sbx.StatePaused, Intent: sbx.IntentResuming}, stateResuming},
		{sbx.Sandbox{State: sbx.StateRunning, Intent: sbx.IntentKilling}, stateStopping},
		{sbx.Sandbox{State: sbx.StateKilled, EndReason: sbx.EndDeleted}, stateTerminated},
		{sbx.Sandbox{State: sbx.StateFailed, EndReason: sbx.EndError}, stateFailed},
	} {
		if got := statusOf(c.sb); got.State != c.want {
			t.Errorf("%s/%s: %s, want %s", c.sb.State, c.sb.Intent, got.State, c.want)
		}
		if !containsState(sbxStates[c.want], c.sb.State) {
			t.Errorf("a list for %s does not read sbx's %s", c.want, c.sb.State)
		}
	}
	if stateName("running") != stateRunning || stateName("gone") != "" {
		t.Error("state names are not matched but for case")
	}
}

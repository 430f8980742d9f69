package incluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/sbxdev/sbx/kubernetes"
)

// A replica killed (its pod deleted with no grace) while a create it serves
// is in flight: the create ends failed, or running with an agent that
// answers, not starting; another
// replica takes over the meter and the reaper (a sandbox's timeout kills
// it); and every sandbox pod and claim left belongs to a sandbox the
// ledger has running (a claim: or paused).
func TestReplicaKilledMidCreate(t *testing.T) {
	d := deploy(t, testOverlay)
	lead := leader(t, "")
	t.Logf("%s leads", lead.Name)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	created := make(chan error, 1)
	go func() {
		_, err := d.client(lead).Create(ctx, d.base, &client.CreateOptions{WaitReady: true})
		created <- err
	}()
	eventually(t, "the create's pod exists", 3*time.Minute, func() (bool, string) {
		select {
		case err := <-created:
			t.Fatalf("the create ended before its pod was seen: %v", err)
		default:
		}
		pods := sandboxObjects(t, "pods")
		return len(pods) > 0, "no pod in " + sandboxNS
	})
	kubectl(t, "-n", serveNS, "delete", "pod", lead.Name, "--grace-period=0", "--force", "--wait=false")
	if err := <-created; err == nil {
		t.Fatal("the create answered although its replica was killed while it was in flight")
	} else {
		t.Logf("the create, cut off: %v", err)
	}

	next := leader(t, lead.Name)
	t.Logf("%s leads now", next.Name)
	c := d.client(next)
	var cut apiv1.Sandbox
	eventually(t, "the cut-off create ends", 3*time.Minute, func() (bool, string) {
		list, err := c.List(ctx, client.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			return false, fmt.Sprintf("sandboxes %+v, %v", list, err)
		}
		cut = list.Items[0]
		return cut.State == "running" || cut.State == "failed", "it is " + cut.State
	})
	t.Logf("the cut-off create: %s %s %s", cut.State, cut.EndReason, cut.Diagnostic)
	if cut.State == "running" { // finished: its agent answers
		if res, err := c.Commands(cut.ID).Run(ctx, "echo finished", nil); err != nil || res.Stdout != "finished\n" {
			t.Errorf("the cut-off create runs, but a command in it: %+v, %v", res, err)
		}
	}

	sb, err := c.Create(ctx, d.base, &client.CreateOptions{WaitReady: true, Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the reaper kills a sandbox at its timeout", 3*time.Minute, func() (bool, string) {
		got, err := c.Get(ctx, sb.Data().SandboxID)
		if err != nil {
			return false, err.Error()
		}
		return got.State == "killed" && got.EndReason == "timeout", got.State + " " + got.EndReason
	})

	eventually(t, "every sandbox pod and claim belongs to a live sandbox", 3*time.Minute, func() (bool, string) {
		list, err := c.List(ctx, client.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var stray []string
		for _, kind := range []string{"pods", "persistentvolumeclaims"} {
			live := []string{"running"}
			if kind == "persistentvolumeclaims" {
				live = append(live, "paused")
			}
			for _, o := range sandboxObjects(t, kind) {
				if sb, ok := o.owner(list.Items); !ok || !slices.Contains(live, sb.State) {
					stray = append(stray, fmt.Sprintf("%s/%s (sandbox %s %s)", kind, o.Name, sb.SandboxID, sb.State))
				}
			}
		}
		return len(stray) == 0, strings.Join(stray, ", ")
	})
}

// object is a pod or claim of the sandbox namespace.
type object struct {
	Name   string
	Labels map[string]string
}

// sandboxObjects lists the objects of kind in the sandbox namespace.
func sandboxObjects(t *testing.T, kind string) []object {
	t.Helper()
	var list struct {
		Items []struct {
			Metadata object
		}
	}
	if err := json.Unmarshal([]byte(kubectl(t, "-n", sandboxNS, "get", kind, "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	var out []object
	for _, i := range list.Items {
		out = append(out, i.Metadata)
	}
	return out
}

// owner is the sandbox o is of: the one whose sbx UUID it is labelled
// with.
func (o object) owner(sandboxes []apiv1.Sandbox) (apiv1.Sandbox, bool) {
	for _, sb := range sandboxes {
		if o.Labels[kubernetes.LabelSandbox] == sb.ID {
			return sb, true
		}
	}
	return apiv1.Sandbox{}, false
}

package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
)

// quotas indexes a summary's quotas by name.
func quotas(sum apiv1.Summary) map[string]apiv1.Quota {
	out := map[string]apiv1.Quota{}
	for _, q := range sum.Quotas {
		out[q.Name] = q
	}
	return out
}

// A plan's disk limit over HTTP: a sandbox's disk is the server's default
// unless the create names one within the server's maximum (a 400 naming
// diskMB otherwise); paused sandboxes keep theirs; a create past the limit
// is a 403 naming the limit, the use and the plan's value; the summary names
// the plan and compares the org's disk with it.
func TestDiskPlanLimitOverHTTP(t *testing.T) {
	s := startServer(t, serverOpts{args: []string{"--disk-mb", "10240", "--max-disk-mb", "20480"}})
	s.call("PUT", "/api/v1/admin/orgs/default/plan", map[string]any{"name": "small", "max_disk_mb": 15000}, http.StatusOK, nil)
	a := s.create(map[string]any{"waitReady": true})
	if a.DiskMB != 10240 {
		t.Fatalf("a create naming no disk gets %d MB, not the server's default", a.DiskMB)
	}
	e := s.fail("POST", "/api/v1/sandboxes", map[string]any{"templateID": "base", "diskMB": 20481}, http.StatusBadRequest,
		"diskMB must be between 1 and 20480")
	if len(e.Errors) != 1 || e.Errors[0].Field != "diskMB" {
		t.Fatalf("the 400 does not name diskMB: %+v", e)
	}
	s.call("POST", "/api/v1/sandboxes/"+a.ID+"/pause", nil, http.StatusOK, nil)
	e = s.fail("POST", "/api/v1/sandboxes", map[string]any{"templateID": "base"}, http.StatusForbidden,
		"plan limit: at most 15000 MB of disk across sandboxes not yet killed (10240 MB held by running and paused sandboxes, this one asks for 10240 MB)")
	if e.Type != "plan_limit_exceeded" {
		t.Fatalf("type %q", e.Type)
	}
	b := s.create(map[string]any{"waitReady": true, "diskMB": 4760})
	if b.DiskMB != 4760 {
		t.Fatalf("a create naming its disk: %d MB", b.DiskMB)
	}

	var sum apiv1.Summary
	s.call("GET", "/api/v1/observability/summary", nil, http.StatusOK, &sum)
	if sum.Plan.Name != "small" || sum.Plan.MaxDiskMB != 15000 {
		t.Errorf("the summary's plan: %+v", sum.Plan)
	}
	q := quotas(sum)
	if d := q["plan_disk_mb"]; d.Limit != 15000 || d.Used != 15000 || !d.OK || !strings.Contains(d.Detail, "(plan small)") {
		t.Errorf("plan_disk_mb: %+v", d)
	}
	if d := q["max_disk_mb_per_sandbox"]; d.Limit != 20480 {
		t.Errorf("max_disk_mb_per_sandbox: %+v", d)
	}
	if sum.Disk != nil {
		t.Errorf("the Memory provider keeps no disk, yet the summary reports one: %+v", sum.Disk)
	}

	s.call("DELETE", "/api/v1/sandboxes/"+a.ID, nil, http.StatusOK, nil)
	s.create(map[string]any{"diskMB": 10240})
}

// The summary compares the org's use with its plan and this host's
// capacity with what every org's sandboxes on it hold: another org's
// sandboxes count against the host, not against this org's plan.
func TestSummaryComparesLikeWithLike(t *testing.T) {
	s := startServer(t, serverOpts{})
	var other apiv1.CreatedOrg
	s.call("POST", "/api/v1/admin/orgs", map[string]any{"name": "other", "kyc_status": "verified", "credits": "100"}, http.StatusCreated, &other)
	s.callKey(other.Secret, "POST", "/api/v1/sandboxes", map[string]any{"templateID": "base", "waitReady": true, "cpu": 3}, http.StatusCreated, nil)
	s.call("PUT", "/api/v1/admin/orgs/default/plan", map[string]any{"max_vcpu": 8}, http.StatusOK, nil)
	s.create(map[string]any{"waitReady": true, "cpu": 1})
	var sum apiv1.Summary
	s.call("GET", "/api/v1/observability/summary", nil, http.StatusOK, &sum)
	q := quotas(sum)
	if v := q["plan_vcpu"]; v.Limit != 8 || v.Used != 1 || !strings.Contains(v.Detail, "(the org's plan)") {
		t.Errorf("plan_vcpu counts the org's sandboxes only: %+v", v)
	}
	if v := q["host_vcpu"]; v.Used != 4 || v.Limit <= 0 {
		t.Errorf("host_vcpu counts every org's sandboxes on the host: %+v", v)
	}
	if _, ok := q["running_vcpu"]; ok || sum.Plan.MaxVCPU != 8 || sum.Plan.Name != "" {
		t.Errorf("summary: %+v", sum)
	}
}

// The host's disk reserve over HTTP, with real sandboxes: the summary
// reports the disk, and with a reserve above what is free a create and the
// wake of a hibernated sandbox are 507s that say why, and leave the
// sandbox as it was.
func TestDiskReserveOverHTTP(t *testing.T) {
	s := localServer(t, false)
	base := s.opts
	a := s.create(map[string]any{"waitReady": true, "diskMB": 256})
	if a.DiskMB != 256 || a.Provider != "local" || a.State != "running" {
		t.Fatalf("a sandbox of 256 MB on the local provider: %+v", a)
	}
	var sum apiv1.Summary
	s.call("GET", "/api/v1/observability/summary", nil, http.StatusOK, &sum)
	d := sum.Disk
	if d == nil || d.TotalMB <= 0 || d.FreeMB <= 0 || d.FreeMB > d.TotalMB || d.ReserveMB != 2048 ||
		d.ReservedBySandboxes <= 0 || d.ReservedBySandboxes > 256 || d.AvailableMB != d.FreeMB-d.ReservedBySandboxes-d.ReserveMB {
		t.Fatalf("the summary's disk: %+v", d)
	}
	if q := quotas(sum)["host_disk_mb"]; q.Used != float64(d.ReservedBySandboxes) || q.Limit != float64(d.FreeMB-d.ReserveMB) || !q.OK {
		t.Errorf("host_disk_mb: %+v", q)
	}
	s.call("POST", "/api/v1/sandboxes/"+a.ID+"/pause", map[string]any{"hibernate": true}, http.StatusOK, nil)

	s.restart(serverOpts{bin: base.bin, args: append(append([]string{}, base.args...), "--disk-reserve", "100%")})
	e := s.fail("POST", "/api/v1/sandboxes", map[string]any{"templateID": "base"}, http.StatusInsufficientStorage,
		"this host has no room on disk to create the sandbox: its writable layer may grow by 2048 MB, and of the host's")
	if e.Type != "insufficient_storage" || !strings.Contains(e.Detail, "MB are kept in reserve; ask for a smaller disk (diskMB)") ||
		strings.Contains(e.Detail, s.dataDir) {
		t.Fatalf("the create's 507: %+v", e)
	}
	s.fail("POST", "/api/v1/sandboxes/"+a.ID+"/resume", nil, http.StatusInsufficientStorage,
		"this host has no room on disk to wake sandbox "+a.SandboxID+": its writable layer may grow by 256 MB")
	if got := s.get(a.ID); got.State != "paused" || !got.Hibernated {
		t.Fatalf("a refused wake changed the sandbox: %s hibernated %v", got.State, got.Hibernated)
	}
	s.call("GET", "/api/v1/observability/summary", nil, http.StatusOK, &sum)
	if d := sum.Disk; d == nil || d.ReserveMB != d.TotalMB || d.AvailableMB != 0 || d.ReservedBySandboxes != 0 ||
		!strings.Contains(strings.Join(sum.NextActions, " "), "This host's disk has room for a sandbox of at most 0 MB") {
		t.Fatalf("the summary past the reserve: %+v %q", sum.Disk, sum.NextActions)
	}

	s.restart(base)
	s.call("POST", "/api/v1/sandboxes/"+a.ID+"/resume", nil, http.StatusOK, nil)
	s.call("DELETE", "/api/v1/sandboxes/"+a.ID, nil, http.StatusOK, nil)
}

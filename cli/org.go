package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/spf13/cobra"
)

// newOrg is the `sbx org` command group: the operator's commands (they need
// the operator's key, the admin key `sbx serve` made at first start), one
// file per verb; this file holds what they share.
func newOrg(g *globals) *cobra.Command {
	return group(&cobra.Command{Use: "org", Aliases: []string{"orgs"}, Short: "Create orgs, list them, set their plans and verification (the operator's)"},
		newOrgCreate(g), newOrgList(g), newOrgPlan(g), newOrgVerify(g))
}

// planFlags are the limits of a plan as flags; 0 is no limit.
type planFlags struct {
	req     apiv1.SetPlanRequest
	vcpu    float64
	timeout time.Duration
}

func (p *planFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&p.req.Name, "plan-name", "", "a name for the plan, such as team")
	f.IntVar(&p.req.MaxSandboxes, "max-sandboxes", 0, "concurrent sandboxes (0: no limit)")
	f.Float64Var(&p.vcpu, "max-vcpu", 0, "vCPU summed over running sandboxes (0: no limit)")
	f.Int64Var(&p.req.MaxMemoryMB, "max-memory-mb", 0, "memory in MB summed over running sandboxes (0: no limit)")
	f.IntVar(&p.req.MaxGPUPercent, "max-gpu-percent", 0, "GPU share in percent of one card summed over running sandboxes, 200 for two cards (0: no limit)")
	f.Int64Var(&p.req.MaxDiskMB, "max-disk-mb", 0, "disk in MB: the writable-layer caps summed over sandboxes not yet deleted, paused ones too (0: no limit)")
	f.IntVar(&p.req.MaxMembers, "max-members", 0, "members per workspace; beyond it the workspace's sandboxes pause (0: no limit)")
	f.Var(durationValue{&p.timeout}, "max-timeout", "the longest timeout one sandbox may have, in seconds or as 1h (default: no limit)")
}

// plan is the request the flags make.
func (p *planFlags) plan() apiv1.SetPlanRequest {
	req := p.req
	if p.vcpu != 0 {
		req.MaxVCPU = &p.vcpu
	}
	req.MaxTimeout = int64((p.timeout + time.Second - 1) / time.Second)
	return req
}

// planText renders a plan's limits on one line.
func planText(p apiv1.Plan) string {
	var parts []string
	add := func(ok bool, format string, v any) {
		if ok {
			parts = append(parts, fmt.Sprintf(format, v))
		}
	}
	add(p.MaxSandboxes > 0, "%d sandboxes", p.MaxSandboxes)
	add(p.MaxVCPU > 0, "%g vCPU", p.MaxVCPU)
	add(p.MaxMemoryMB > 0, "%d MB", p.MaxMemoryMB)
	add(p.MaxGPUPercent > 0, "%d%% GPU", p.MaxGPUPercent)
	add(p.MaxDiskMB > 0, "%d MB disk", p.MaxDiskMB)
	add(p.MaxMembers > 0, "%d members/workspace", p.MaxMembers)
	add(p.MaxTimeout > 0, "%s timeout", time.Duration(p.MaxTimeout)*time.Second)
	text := "no limits"
	if len(parts) > 0 {
		text = strings.Join(parts, ", ")
	}
	if p.Name != "" {
		text = p.Name + ": " + text
	}
	return text
}

// orgFields are an org's lines in a detail view.
func orgFields(o apiv1.Org) []field {
	return []field{{"Org ID", o.ID}, {"Name", o.Name}, {"Verification", o.KYCStatus}, {"Plan", planText(o.Plan)}, {"Created", stamp(o.CreatedAt)}}
}

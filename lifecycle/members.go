package lifecycle

import (
	"context"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/ledger"
)

// The member limit. A workspace with more members than its org's plan
// allows keeps its members but not its compute: its running sandboxes are
// paused with pause_reason member_limit_exceeded, and the ledger admits no
// create or resume in it (plan_limit_exceeded) while it is over. Once it is
// back within the limit (members removed, or a larger plan), the sandboxes
// paused for that reason are resumed.

// MemberChange is what adding or removing a member did.
type MemberChange struct {
	Member  sbx.Member
	Count   ledger.MemberCount
	Paused  []sbx.Sandbox // paused for the member limit by this change
	Resumed []sbx.Sandbox // resumed by this change, the workspace back within its limit
}

// AddMember makes the user with email a member of a workspace of an org
// with role; beyond the plan's member limit the workspace's compute pauses.
func (m *Manager) AddMember(ctx context.Context, orgID, workspace, email, name string, role sbx.Role) (MemberChange, error) {
	mem, count, err := m.store.AddMember(ctx, orgID, workspace, email, name, role, m.clock.Now())
	if err != nil {
		return MemberChange{}, err
	}
	ch := MemberChange{Member: mem, Count: count}
	ch.Paused, ch.Resumed = m.enforceMemberLimit(ctx, mem.WorkspaceID, count)
	return ch, nil
}

// RemoveMember ends a user's membership of a workspace; back within the
// member limit, the compute it paused resumes.
func (m *Manager) RemoveMember(ctx context.Context, orgID, workspace, user string) (MemberChange, error) {
	mem, count, err := m.store.RemoveMember(ctx, orgID, workspace, user)
	if err != nil {
		return MemberChange{}, err
	}
	ch := MemberChange{Member: mem, Count: count}
	ch.Paused, ch.Resumed = m.enforceMemberLimit(ctx, mem.WorkspaceID, count)
	return ch, nil
}

// SetPlan replaces an org's plan and applies its member limit to every
// workspace of the org at once; its compute limits apply from the next
// admission. It answers the sandboxes it paused and resumed.
func (m *Manager) SetPlan(ctx context.Context, org string, plan sbx.Plan) (sbx.Org, []sbx.Sandbox, []sbx.Sandbox, error) {
	o, err := m.store.SetPlan(ctx, org, plan)
	if err != nil {
		return o, nil, nil, err
	}
	counts, err := m.store.MemberCounts(ctx, o.ID)
	if err != nil {
		return o, nil, nil, err
	}
	var paused, resumed []sbx.Sandbox
	for ws, count := range counts {
		p, r := m.enforceMemberLimit(ctx, ws, count)
		paused, resumed = append(paused, p...), append(resumed, r...)
	}
	return o, paused, resumed, nil
}

// enforceMemberLimit pauses the compute of a workspace over its member
// limit, or resumes what the limit paused once it is within. A sandbox that
// cannot be paused or resumed now (it is being deleted, the provider fails,
// another plan limit refuses the resume) is logged and left as it is.
func (m *Manager) enforceMemberLimit(ctx context.Context, workspaceID string, count ledger.MemberCount) (paused, resumed []sbx.Sandbox) {
	if count.Over() {
		// Starting and resuming sandboxes are paused once their operation
		// settles: the pause waits for the sandbox's lock, which it holds.
		list, err := m.store.SandboxesInWorkspace(ctx, workspaceID, sbx.StateStarting, sbx.StateRunning, sbx.StatePaused)
		if err != nil {
			m.log.Error("member limit: listing the workspace's sandboxes", "workspace", workspaceID, "err", err)
			return nil, nil
		}
		for _, sb := range list {
			if sb.State == sbx.StatePaused && sb.Intent != sbx.IntentResuming {
				continue
			}
			p, err := m.pause(ctx, sb.ID, sbx.PauseMemberLimitExceeded)
			if err != nil {
				m.log.Warn("member limit: could not pause a sandbox", "workspace", workspaceID, "sandbox", sb.ID, "err", err)
				continue
			}
			paused = append(paused, p)
		}
		return paused, nil
	}
	list, err := m.store.SandboxesInWorkspace(ctx, workspaceID, sbx.StatePaused)
	if err != nil {
		m.log.Error("member limit: listing the workspace's paused sandboxes", "workspace", workspaceID, "err", err)
		return nil, nil
	}
	for _, sb := range list {
		if sb.PauseReason != sbx.PauseMemberLimitExceeded {
			continue
		}
		r, err := m.resume(ctx, sb.ID, 0)
		if err != nil {
			m.log.Warn("member limit: could not resume a sandbox it paused", "workspace", workspaceID, "sandbox", sb.ID, "err", err)
			continue
		}
		resumed = append(resumed, r)
	}
	return nil, resumed
}

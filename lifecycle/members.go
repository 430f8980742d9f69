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

// Members applies the member limit over the sandbox core (Manager): a
// change of a workspace's members or of an org's plan, and the pauses and
// resumes it makes. It is what tenancy's Compute asks; it reads and writes
// members and plans through its own MemberStore.
type Members struct {
	m     *Manager
	store MemberStore
}

// NewMembers returns the member limit over the core m and its store.
func NewMembers(m *Manager, store MemberStore) *Members { return &Members{m: m, store: store} }

// MemberChange is what adding or removing a member did.
type MemberChange struct {
	Member  sbx.Member
	Count   ledger.MemberCount
	Paused  []sbx.Sandbox // paused for the member limit by this change
	Resumed []sbx.Sandbox // resumed by this change, the workspace back within its limit
}

// AddMember makes the user with email a member of a workspace of an org
// with role; beyond the plan's member limit the workspace's compute pauses.
func (ms *Members) AddMember(ctx context.Context, orgID, workspace, email, name string, role sbx.Role) (MemberChange, error) {
	mem, count, err := ms.store.AddMember(ctx, orgID, workspace, email, name, role, ms.m.clock.Now())
	if err != nil {
		return MemberChange{}, err
	}
	ch := MemberChange{Member: mem, Count: count}
	ch.Paused, ch.Resumed = ms.enforceMemberLimit(ctx, mem.WorkspaceID, count)
	return ch, nil
}

// RemoveMember ends a user's membership of a workspace; back within the
// member limit, the compute it paused resumes.
func (ms *Members) RemoveMember(ctx context.Context, orgID, workspace, user string) (MemberChange, error) {
	mem, count, err := ms.store.RemoveMember(ctx, orgID, workspace, user)
	if err != nil {
		return MemberChange{}, err
	}
	ch := MemberChange{Member: mem, Count: count}
	ch.Paused, ch.Resumed = ms.enforceMemberLimit(ctx, mem.WorkspaceID, count)
	return ch, nil
}

// SetPlan replaces an org's plan and applies its member limit to every
// workspace of the org at once; its compute limits apply from the next
// admission. It answers the sandboxes it paused and resumed.
func (ms *Members) SetPlan(ctx context.Context, org string, plan sbx.Plan) (sbx.Org, []sbx.Sandbox, []sbx.Sandbox, error) {
	o, err := ms.store.SetPlan(ctx, org, plan)
	if err != nil {
		return o, nil, nil, err
	}
	counts, err := ms.store.MemberCounts(ctx, o.ID)
	if err != nil {
		return o, nil, nil, err
	}
	var paused, resumed []sbx.Sandbox
	for ws, count := range counts {
		p, r := ms.enforceMemberLimit(ctx, ws, count)
		paused, resumed = append(paused, p...), append(resumed, r...)
	}
	return o, paused, resumed, nil
}

// enforceMemberLimit pauses the compute of a workspace over its member
// limit, or resumes what the limit paused once it is within. A sandbox that
// cannot be paused or resumed now (it is being deleted, the provider fails,
// another plan limit refuses the resume) is logged and left as it is.
func (ms *Members) enforceMemberLimit(ctx context.Context, workspaceID string, count ledger.MemberCount) (paused, resumed []sbx.Sandbox) {
	if count.Over() {
		// Starting and resuming sandboxes are paused once their operation
		// settles: the pause waits for the sandbox's lock, which it holds.
		list, err := ms.store.SandboxesInWorkspace(ctx, workspaceID, sbx.StateStarting, sbx.StateRunning, sbx.StatePaused)
		if err != nil {
			ms.m.log.Error("member limit: listing the workspace's sandboxes", "workspace", workspaceID, "err", err)
			return nil, nil
		}
		for _, sb := range list {
			if sb.State == sbx.StatePaused && sb.Intent != sbx.IntentResuming {
				continue
			}
			p, err := ms.m.pause(ctx, sb.ID, sbx.PauseMemberLimitExceeded)
			if err != nil {
				ms.m.log.Warn("member limit: could not pause a sandbox", "workspace", workspaceID, "sandbox", sb.ID, "err", err)
				continue
			}
			paused = append(paused, p)
		}
		return paused, nil
	}
	list, err := ms.store.SandboxesInWorkspace(ctx, workspaceID, sbx.StatePaused)
	if err != nil {
		ms.m.log.Error("member limit: listing the workspace's paused sandboxes", "workspace", workspaceID, "err", err)
		return nil, nil
	}
	for _, sb := range list {
		if sb.PauseReason != sbx.PauseMemberLimitExceeded {
			continue
		}
		r, err := ms.m.resume(ctx, sb.ID, 0, "")
		if err != nil {
			ms.m.log.Warn("member limit: could not resume a sandbox it paused", "workspace", workspaceID, "sandbox", sb.ID, "err", err)
			continue
		}
		resumed = append(resumed, r)
	}
	return nil, resumed
}

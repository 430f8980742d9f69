package ledger

import (
	"context"
	"time"

	"github.com/sbxdev/sbx"
)

// Usage is sbx.Usage.
type Usage = sbx.Usage

func addUsage(u *Usage, state sbx.State, kind sbx.Kind, provider string, n int, cpu, mem int64, life float64, billed int64) {
	if u.ByState == nil {
		u.ByState, u.ByKind, u.ByProvider = map[sbx.State]int{}, map[sbx.Kind]int{}, map[string]int{}
	}
	u.Sandboxes += n
	u.ByState[state] += n
	u.ByKind[kind] += n
	u.ByProvider[provider] += n
	u.RunningMilliCPU += cpu
	u.RunningMemoryMB += mem
	u.LifetimeSeconds += life
	u.BilledMicros += billed
}

// UsageByProject sums an org's sandboxes within reach per project ID, as
// of now.
func (s *Store) UsageByProject(ctx context.Context, orgID string, reach sbx.Reach, now time.Time) (map[string]*Usage, error) {
	within, withinArgs := reachClause(reach, "workspace_id", "project_id")
	rows, err := s.read(ctx).query(ctx, `
		SELECT project_id, state, kind, provider, count(*),
			CAST(sum(CASE WHEN state = 'running' THEN milli_cpu ELSE 0 END) AS BIGINT),
			CAST(sum(CASE WHEN state = 'running' THEN memory_mb ELSE 0 END) AS BIGINT),
			CAST(sum(CASE WHEN started_at IS NULL THEN 0 ELSE coalesce(ended_at, ?) - started_at END) AS BIGINT),
			CAST(sum(billed_micros) AS BIGINT)
		FROM sandboxes WHERE `+within+`org_id = ?
		GROUP BY project_id, state, kind, provider`, append(append([]any{now.UnixMicro()}, withinArgs...), orgID)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]*Usage{}
	for rows.Next() {
		var project, state, kind, provider string
		var n int
		var cpu, mem, lifeMicros, billed int64
		if err := rows.Scan(&project, &state, &kind, &provider, &n, &cpu, &mem, &lifeMicros, &billed); err != nil {
			return nil, err
		}
		if out[project] == nil {
			out[project] = &Usage{}
		}
		addUsage(out[project], sbx.State(state), sbx.Kind(kind), provider, n, cpu, mem, float64(lifeMicros)/1e6, billed)
	}
	return out, rows.Err()
}

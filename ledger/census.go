package ledger

import (
	"context"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/telemetry"
)

// Counts counts, for the metrics, sandboxes by provider and state (an
// index-only scan of sandboxes_open), every warm pool's bounds and its
// members by state, and template builds by state.
func (s *Store) Counts(ctx context.Context) (telemetry.Counts, error) {
	q := s.read(ctx)
	out := telemetry.Counts{Builds: map[sbx.BuildState]int{}}
	rows, err := q.query(ctx, `SELECT provider, state, count(*) FROM sandboxes GROUP BY provider, state`)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		var c telemetry.SandboxCount
		if err := rows.Scan(&c.Provider, &c.State, &c.N); err != nil {
			return out, err
		}
		out.Sandboxes = append(out.Sandboxes, c)
	}
	if err := rows.Err(); err != nil {
		return out, err
	}
	if out.Pools, err = poolSizes(ctx, q); err != nil {
		return out, err
	}
	builds, err := q.query(ctx, `SELECT state, count(*) FROM template_builds GROUP BY state`)
	if err != nil {
		return out, err
	}
	defer builds.Close()
	for builds.Next() {
		var state sbx.BuildState
		var n int
		if err := builds.Scan(&state, &n); err != nil {
			return out, err
		}
		out.Builds[state] = n
	}
	return out, builds.Err()
}

// poolSizes answers every warm pool with its members not yet final.
func poolSizes(ctx context.Context, q db) ([]telemetry.PoolSize, error) {
	rows, err := q.query(ctx, `SELECT p.template_id, p.min_ready, p.max_ready, coalesce(s.state, ''), count(s.id)
		FROM template_pools p LEFT JOIN sandboxes s ON s.pool = p.template_id AND s.state IN ('starting', 'running', 'paused')
		GROUP BY p.template_id, p.min_ready, p.max_ready, s.state ORDER BY p.template_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []telemetry.PoolSize
	for rows.Next() {
		var p telemetry.PoolSize
		var state sbx.State
		var n int
		if err := rows.Scan(&p.Template, &p.MinReady, &p.MaxReady, &state, &n); err != nil {
			return nil, err
		}
		if len(out) == 0 || out[len(out)-1].Template != p.Template {
			p.Members = map[sbx.State]int{}
			out = append(out, p)
		}
		if state != "" {
			out[len(out)-1].Members[state] = n
		}
	}
	return out, rows.Err()
}

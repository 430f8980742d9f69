package ledger

import (
	"bytes"
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/testpg"
)

// BenchmarkSettle measures settlements per second, one after another as the
// meter makes them and from many goroutines, on SQLite and on PostgreSQL;
// each beside its baseline, the smallest write transaction on the same
// database (one UPDATE of one row):
//
//	go test ./ledger -run '^$' -bench Settle -benchtime 5s
func BenchmarkSettle(b *testing.B) {
	for _, d := range []struct {
		name string
		dsn  func(b *testing.B) string
	}{
		{"sqlite", func(b *testing.B) string { return filepath.Join(b.TempDir(), "l.db") }},
		{"postgres", func(b *testing.B) string { return testpg.URL(b) }},
	} {
		b.Run(d.name, func(b *testing.B) {
			s, ids := benchLedger(b, d.dsn(b), 50)
			table, err := s.Rates(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			var clock atomic.Int64
			settle := func(i int) {
				now := time.Unix(1_800_000_000, 0).Add(time.Duration(clock.Add(1000)) * time.Microsecond)
				if _, err := s.Settle(context.Background(), ids[i%len(ids)], now, table); err != nil {
					b.Fatal(err)
				}
			}
			baseline := func(i int) {
				err := s.write(context.Background(), func(tx db) error {
					_, err := tx.exec(context.Background(), `UPDATE sandboxes SET unbilled_nanos = unbilled_nanos WHERE id = ?`, ids[i%len(ids)])
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			for _, op := range []struct {
				name string
				fn   func(int)
			}{{"settle", settle}, {"baseline", baseline}} {
				b.Run(op.name+"/sequential", func(b *testing.B) {
					for i := 0; b.Loop(); i++ {
						op.fn(i)
					}
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
				})
				b.Run(op.name+"/parallel", func(b *testing.B) {
					var n atomic.Int64
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							op.fn(int(n.Add(1)))
						}
					})
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
				})
			}
		})
	}
}

// benchLedger makes a ledger with an org of plenty of credits and n
// running sandboxes.
func benchLedger(b *testing.B, dsn string, n int) (*Store, []string) {
	ctx := context.Background()
	s, err := Open(ctx, dsn, bytes.Repeat([]byte{3}, 32))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	t0 := time.Unix(1_800_000_000, 0)
	org, ws, p, err := s.CreateOrg(ctx, "bench", t0)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.TopUp(ctx, org.ID, 1<<60, "bench", t0); err != nil {
		b.Fatal(err)
	}
	var ids []string
	for range n {
		sb := sbx.Sandbox{ID: uuid.NewString(), OrgID: org.ID, WorkspaceID: ws.ID, ProjectID: p.ID, Provider: "bench",
			ProviderSandboxID: "i" + uuid.NewString()[:12], Kind: sbx.KindTask, TemplateID: "base", State: sbx.StateRunning,
			CreatedAt: t0, UpdatedAt: t0, StartedAt: t0, LastSettledAt: t0, Timeout: time.Hour,
			Resources: sbx.Resources{MilliCPU: 2000, MemoryMB: 2048}}
		if err := s.InsertSandbox(ctx, sb); err != nil {
			b.Fatal(err)
		}
		ids = append(ids, sb.ID)
	}
	return s, ids
}

package local

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sbxdev/sbx"
)

// The disk of the sandboxes. Each sandbox's writable layer is capped
// (Config.DiskMB, or the sandbox's own disk size) but takes space only as it
// is written, so caps alone would let the sandboxes of a host promise more
// than its disk holds. A create, and the resume of a paused or hibernated
// sandbox, is admitted only when the filesystem of the data dir keeps its
// reserve (Config.DiskReserve) after every live sandbox has written its
// layer to the cap: free space, less what running, paused and starting
// sandboxes may still write (cap less what their layer holds now), less the
// new sandbox's share. A hibernated sandbox writes nothing until it wakes:
// its layer is in its checkpoint, counted as used. An admitted create or
// wake holds its share until its operation records the sandbox (Create,
// Resume), or for pendingFor when none follows (a create the ledger
// refused).

// pendingFor is how long an admission holds its share without a create or
// resume to follow it.
const pendingFor = time.Minute

// Reserve is how much of the data dir's filesystem the provider keeps free:
// Bytes, or Percent of the filesystem's size, the larger of the two.
type Reserve struct {
	Bytes   int64
	Percent float64
}

// DefaultReserve is serve's: 2 GiB.
var DefaultReserve = Reserve{Bytes: 2 << 30}

// ParseReserve reads a reserve: a percentage of the filesystem ("5%"), or a
// size in bytes with an optional binary unit ("2GiB", "500M", "0").
func ParseReserve(s string) (Reserve, error) {
	bad := fmt.Errorf("%q: want a size such as 2GiB or 500MiB, or a share of the disk such as 5%%", s)
	if n, ok := strings.CutSuffix(s, "%"); ok {
		pc, err := strconv.ParseFloat(n, 64)
		if err != nil || !(pc >= 0 && pc <= 100) {
			return Reserve{}, bad
		}
		return Reserve{Percent: pc}, nil
	}
	num := strings.TrimRight(s, "KMGTiBb")
	unit := strings.TrimSuffix(strings.TrimSuffix(s[len(num):], "B"), "i")
	shift, ok := map[string]int{"": 0, "K": 10, "M": 20, "G": 30, "T": 40}[unit]
	n, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || !(n >= 0) || n*math.Exp2(float64(shift)) > math.MaxInt64/2 {
		return Reserve{}, bad
	}
	return Reserve{Bytes: int64(n * math.Exp2(float64(shift)))}, nil
}

func (r Reserve) String() string {
	if r.Percent > 0 {
		return strconv.FormatFloat(r.Percent, 'f', -1, 64) + "%"
	}
	for _, u := range []struct {
		name  string
		shift uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if r.Bytes > 0 && r.Bytes%(1<<u.shift) == 0 {
			return strconv.FormatInt(r.Bytes>>u.shift, 10) + u.name
		}
	}
	return strconv.FormatInt(r.Bytes, 10)
}

// of is the reserve on a filesystem of total bytes.
func (r Reserve) of(total int64) int64 {
	return max(r.Bytes, int64(float64(total)*r.Percent/100))
}

// pendingDisk is an admitted share not yet held by a recorded sandbox.
type pendingDisk struct {
	bytes int64
	until time.Time
}

// Disk implements sbx.DiskReporter: the data dir's filesystem, what the
// live sandboxes may still write, and the reserve.
func (p *Provider) Disk(ctx context.Context) (sbx.Disk, error) {
	p.diskMu.Lock()
	defer p.diskMu.Unlock()
	return p.disk("")
}

// disk measures the filesystem and what live sandboxes other than except
// may still write. p.diskMu is held.
func (p *Provider) disk(except string) (sbx.Disk, error) {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(p.sandboxesDir(), &fs); err != nil {
		return sbx.Disk{}, fmt.Errorf("measuring the sandboxes' filesystem: %w", err)
	}
	d := sbx.Disk{Total: int64(fs.Blocks) * fs.Bsize, Free: int64(fs.Bavail) * fs.Bsize}
	d.Reserve = p.cfg.DiskReserve.of(d.Total)
	now := time.Now()
	for id, pd := range p.pending {
		if now.After(pd.until) {
			delete(p.pending, id)
		} else if id != except {
			d.Committed += pd.bytes
		}
	}
	ids, err := p.sandboxIDs()
	if err != nil {
		return d, err
	}
	for _, id := range ids {
		if _, pending := p.pending[id]; pending || id == except {
			continue
		}
		if m, err := p.readMeta(id); err == nil {
			d.Committed += p.mayWrite(m)
		}
	}
	return d, nil
}

// diskCap is the cap, in bytes, of a sandbox's writable layer.
func (p *Provider) diskCap(m meta) int64 {
	if m.DiskMB > 0 {
		return m.DiskMB << 20
	}
	return p.cfg.DiskMB << 20 // recorded before sandboxes had sizes of their own
}

// mayWrite is what a sandbox may still write to its layer: its cap less
// what the layer holds, while it runs, is paused or is being created.
func (p *Provider) mayWrite(m meta) int64 {
	switch m.State {
	case stateCreating, stateRunning, statePaused:
		return max(p.diskCap(m)-p.engine.layerUsed(m.ProviderID), 0)
	}
	return 0
}

// admitDisk admits a sandbox whose layer may grow by need bytes, or refuses
// it with a 507 that says what the disk holds. With hold, the share is held
// for id until dropPending.
func (p *Provider) admitDisk(id string, need int64, hold bool, what string) error {
	p.diskMu.Lock()
	defer p.diskMu.Unlock()
	d, err := p.disk(id)
	if err != nil {
		return err
	}
	if d.Free-d.Committed-need < d.Reserve {
		return sbx.Errorf(sbx.ENoStorage, "this host has no room on disk to %s: its writable layer may grow by %d MB, and of the host's %d MB free, "+
			"running and paused sandboxes may still write %d MB and %d MB are kept in reserve; ask for a smaller disk (diskMB), "+
			"delete sandboxes (a paused one keeps its disk), or ask the operator for room",
			what, mb(need), mb(d.Free), mb(d.Committed), mb(d.Reserve))
	}
	if hold {
		p.pending[id] = pendingDisk{bytes: need, until: time.Now().Add(pendingFor)}
	}
	return nil
}

// dropPending ends the share an admission held for id: its operation has
// recorded the sandbox, or failed.
func (p *Provider) dropPending(id string) {
	p.diskMu.Lock()
	delete(p.pending, id)
	p.diskMu.Unlock()
}

// AdmitResume implements sbx.ResumeAdmitter: a hibernated sandbox wakes,
// and a paused one continues, only while the disk keeps its reserve.
func (p *Provider) AdmitResume(ctx context.Context, h sbx.Handle) error {
	id, err := handleID(h)
	if err != nil {
		return err
	}
	m, err := p.readMeta(id)
	if err != nil {
		return nil // the resume answers for a sandbox that is gone
	}
	if m.State == stateHibernated {
		return p.admitDisk(id, p.diskCap(m), true, "wake sandbox "+id)
	}
	return p.admitDisk(id, p.mayWrite(m), false, "resume sandbox "+id)
}

// mb is bytes in whole MB, rounded down.
func mb(bytes int64) int64 { return bytes >> 20 }

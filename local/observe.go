package local

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
)

// Logs implements sbx.LogReader: the sandbox's output.log, the provider's
// dated lines as source "local" and the sandbox's own output as "output",
// each dated by the provider line before it; a last line without its
// newline too.
func (p *Provider) Logs(ctx context.Context, h sbx.Handle) ([]sbx.LogLine, error) {
	lines, _, err := p.readLog(h, sbx.LogCursor{}, true)
	return lines, err
}

// LogsFrom implements sbx.LogFollower: the whole lines of output.log after
// from, and where the next read goes on.
func (p *Provider) LogsFrom(ctx context.Context, h sbx.Handle, from sbx.LogCursor) ([]sbx.LogLine, sbx.LogCursor, error) {
	return p.readLog(h, from, false)
}

// readLog parses output.log from cursor from on; with partial, a last line
// without its newline is answered too (and not counted in the cursor).
func (p *Provider) readLog(h sbx.Handle, from sbx.LogCursor, partial bool) ([]sbx.LogLine, sbx.LogCursor, error) {
	id, err := handleID(h)
	if err != nil {
		return nil, from, err
	}
	f, err := os.Open(p.outputFile(id))
	if os.IsNotExist(err) {
		return nil, from, nil
	}
	if err != nil {
		return nil, from, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() < from.Offset {
		from = sbx.LogCursor{} // a new file: start it again
	}
	if _, err := f.Seek(from.Offset, io.SeekStart); err != nil {
		return nil, from, err
	}
	var lines []sbx.LogLine
	next := from
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		raw, err := r.ReadSlice('\n')
		whole := err == nil
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line over the buffer: take what is there as a line of its own.
			whole, err = true, nil
		}
		if len(raw) > 0 && (whole || partial) {
			text := strings.TrimSuffix(string(raw), "\n")
			if stamp, note, ok := parseNote(text); ok {
				next.At = stamp
				lines = append(lines, sbx.LogLine{At: stamp, Source: Name, Line: p.scrub(note)})
			} else {
				lines = append(lines, sbx.LogLine{At: next.At, Source: "output", Line: p.scrub(text)})
			}
			if whole {
				next.Offset += int64(len(raw))
			}
		}
		if err == io.EOF {
			return lines, next, nil
		}
		if err != nil {
			return lines, next, err
		}
	}
}

// Metrics implements sbx.MetricsReader: CPU, memory, processes and network
// as gVisor counts them (runc: as the cgroups do), and the bytes the
// writable layer holds on disk.
func (p *Provider) Metrics(ctx context.Context, h sbx.Handle) (sbx.Metrics, error) {
	id, err := handleID(h)
	if err != nil {
		return sbx.Metrics{}, err
	}
	st, err := p.rs.Stats(ctx, id)
	if err != nil {
		return sbx.Metrics{}, err
	}
	out := sbx.Metrics{At: time.Now().UTC(), CPUSeconds: float64(st.CPU.Usage.Total) / 1e9,
		MemoryBytes: int64(st.Memory.Usage.Usage), Processes: int64(st.Pids.Current)}
	for _, nic := range st.Interfaces {
		if nic.Name != "lo" {
			out.NetRxBytes += int64(nic.RxBytes)
			out.NetTxBytes += int64(nic.TxBytes)
		}
	}
	out.DiskUsedBytes = p.engine.layerUsed(id)
	return out, nil
}

// Addresses answers how many of its network pool's sandbox addresses are in
// use and how many there are (for the metrics); ok is false when sandboxes
// run without a network of their own.
func (p *Provider) Addresses() (used, total int, ok bool) {
	if p.cfg.Network == nil {
		return 0, 0, false
	}
	used, total = p.cfg.Network.Addresses()
	return used, total, true
}

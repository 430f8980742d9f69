package local

import (
	"bufio"
	"context"
	"os"
	"time"

	"github.com/sbxdev/sbx"
)

// Logs implements sbx.LogReader: the sandbox's output.log, the provider's
// dated lines as source "local" and the sandbox's own output as "output",
// each dated by the provider line before it.
func (p *Provider) Logs(ctx context.Context, h sbx.Handle) ([]sbx.LogLine, error) {
	id, err := handleID(h)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p.outputFile(id))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []sbx.LogLine
	var at time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if stamp, text, ok := parseNote(sc.Text()); ok {
			at = stamp
			lines = append(lines, sbx.LogLine{At: at, Source: Name, Line: p.scrub(text)})
		} else {
			lines = append(lines, sbx.LogLine{At: at, Source: "output", Line: p.scrub(sc.Text())})
		}
	}
	return lines, sc.Err()
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

package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Stat summarizes the samples of one measurement.
type Stat struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50_ms"`
	P95 float64 `json:"p95_ms"`
}

// NewStat sorts a copy of the samples and takes their percentiles.
func NewStat(samples []time.Duration) Stat {
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	return Stat{N: len(sorted), P50: ms(Percentile(sorted, 50)), P95: ms(Percentile(sorted, 95))}
}

// Percentile is the nearest-rank percentile p (0 < p ≤ 100) of sorted
// samples: the smallest sample that at least p percent of them do not exceed.
// It is 0 for no samples.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// Ratio is a ÷ b, or 0 when b is not positive: a missing baseline gives no ratio.
func Ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Report is the outcome of one run of the lifecycle benchmark. Times are in
// milliseconds, memory in MiB ("MB" in the table).
type Report struct {
	Date     string `json:"date"`
	Host     string `json:"host"`
	Runsc    string `json:"runsc"`
	Template string `json:"template"`
	Load     string `json:"load"`

	Create      *CreateResult      `json:"create,omitempty"`
	Pause       *PauseResult       `json:"pause,omitempty"`
	Docker      *DockerResult      `json:"docker,omitempty"`
	E2BProvider *E2BProviderResult `json:"e2b_provider,omitempty"`
	Kubernetes  *KubernetesResult  `json:"kubernetes,omitempty"`
	Hibernate   []HibernateResult  `json:"hibernate,omitempty"`
	Idle        []IdleResult       `json:"idle,omitempty"`
	Exec        *ExecResult        `json:"exec,omitempty"`
	Preview     *PreviewResult     `json:"preview,omitempty"`
	State       *StateResult       `json:"state,omitempty"`
	Code        *CodeResult        `json:"code,omitempty"`
	E2B         *E2BResult         `json:"e2b,omitempty"`
	SDK         *SDKResult         `json:"sdk,omitempty"`
	Notes       []string           `json:"notes,omitempty"`

	Rows []Row `json:"rows"` // the table: what was measured against its baseline and target
}

// Row is one line of the table.
type Row struct {
	Measure  string  `json:"measure"`
	Local    string  `json:"local"`    // the local provider's figure
	Baseline string  `json:"baseline"` // what it is compared with, measured in the same run
	Ratio    float64 `json:"ratio,omitempty"`
	Target   string  `json:"target,omitempty"`
	Met      *bool   `json:"met,omitempty"` // nil: no target
}

// maxRatio, maxMs and maxMB are targets; each returns its text and whether
// the value meets it.
func maxRatio(v, limit float64) (string, *bool) {
	met := v > 0 && v <= limit
	return fmt.Sprintf("≤ %.1f×", limit), &met
}

func maxMs(v, limit float64) (string, *bool) {
	met := v < limit
	return fmt.Sprintf("< %.0f ms", limit), &met
}

// idleTargetMB is the most host memory an idle sandbox may cost: 1000 of
// them on one 24 GiB host, as the pools that hold them need.
const idleTargetMB = 16

func maxMB(v, limit float64) (string, *bool) {
	met := v <= limit
	return fmt.Sprintf("≤ %.0f MB", limit), &met
}

// rows turns the results into the table.
func (r *Report) rows() []Row {
	var rows []Row
	if c := r.Create; c != nil {
		t, met := maxRatio(Ratio(c.Local.P50, c.Runsc.P50), 1.2)
		rows = append(rows,
			Row{"create→running p50", msText(c.Local.P50), "runsc run " + msText(c.Runsc.P50), Ratio(c.Local.P50, c.Runsc.P50), t + " runsc", met},
			Row{"create→running p95", msText(c.Local.P95), "runsc run " + msText(c.Runsc.P95), Ratio(c.Local.P95, c.Runsc.P95), "", nil})
		if c.Runc != nil {
			rows = append(rows, Row{"create→running p50", msText(c.Local.P50), "runc run " + msText(c.Runc.P50), Ratio(c.Local.P50, c.Runc.P50), "", nil})
		} else {
			rows = append(rows, Row{"create→running p50", msText(c.Local.P50), "runc: " + c.RuncSkipped, 0, "", nil})
		}
		if c.Docker != nil {
			rows = append(rows, Row{"create→running p50", msText(c.Local.P50), "docker run " + msText(c.Docker.P50), Ratio(c.Local.P50, c.Docker.P50), "", nil})
		} else {
			rows = append(rows, Row{"create→running p50", msText(c.Local.P50), "docker: " + c.DockerSkipped, 0, "", nil})
		}
	}
	if p := r.Pause; p != nil {
		t, met := maxMs(p.Pause.P50, 30)
		rows = append(rows, Row{"pause p50", msText(p.Pause.P50), "runsc pause " + msText(p.RunscPause.P50), Ratio(p.Pause.P50, p.RunscPause.P50), t, met})
		t, met = maxMs(p.Resume.P50, 30)
		rows = append(rows, Row{"resume p50", msText(p.Resume.P50), "runsc resume " + msText(p.RunscResume.P50), Ratio(p.Resume.P50, p.RunscResume.P50), t, met})
	}
	if d := r.Docker; d != nil {
		rows = append(rows, d.rows()...)
	}
	if e := r.E2BProvider; e != nil {
		rows = append(rows, e.rows()...)
	}
	if k := r.Kubernetes; k != nil {
		rows = append(rows, k.rows()...)
	}
	for _, h := range r.Hibernate {
		rows = append(rows, Row{fmt.Sprintf("hibernate %d MB p50", h.SizeMB), msText(h.Hibernate.P50),
			"runsc checkpoint+delete " + msText(h.RunscCheckpoint.P50), Ratio(h.Hibernate.P50, h.RunscCheckpoint.P50), "", nil})
		wake := Row{Measure: fmt.Sprintf("wake %d MB p50", h.SizeMB), Local: msText(h.Wake.P50),
			Baseline: "runsc restore " + msText(h.RunscRestore.P50), Ratio: Ratio(h.Wake.P50, h.RunscRestore.P50)}
		if h.SizeMB == 64 {
			wake.Target, wake.Met = maxMs(h.Wake.P50, 300)
		}
		rows = append(rows, wake)
	}
	for _, i := range r.Idle {
		t, met := maxMB(i.PerSandboxMB, idleTargetMB)
		check := fmt.Sprintf("MemAvailable −%.1f MB on create", i.MemAvailableDropMB)
		if i.MemAvailableRiseMB != 0 {
			check += fmt.Sprintf(", +%.1f MB on removal", i.MemAvailableRiseMB)
		}
		rows = append(rows, Row{fmt.Sprintf("host memory per idle sandbox, %d held", i.Count), fmt.Sprintf("%.1f MB", i.PerSandboxMB), check, 0, t, met})
	}
	if x := r.Exec; x != nil {
		if rt := x.RoundTrip; rt.Local.N > 0 {
			t, met := maxMs(rt.Local.P50, 5)
			rows = append(rows,
				Row{"exec `true` round trip p50", msText(rt.Local.P50), "runsc exec " + msText(rt.Runsc.P50), Ratio(rt.Local.P50, rt.Runsc.P50), t, met},
				Row{"exec `true` round trip p95", msText(rt.Local.P95), "runsc exec " + msText(rt.Runsc.P95), Ratio(rt.Local.P95, rt.Runsc.P95), "", nil})
		}
		if s := x.Spawn; s.N > 0 {
			rows = append(rows, Row{"`true` run inside the sandbox p50", msText(s.P50), "gVisor's floor under the round trip", 0, "", nil})
		}
		for _, tr := range []struct {
			name string
			t    Transfer
		}{{"stdout of a command", x.Output}, {"file upload", x.Upload}, {"file download", x.Download}} {
			if tr.t.Local.N == 0 {
				continue // not measured: the run stopped before
			}
			row := Row{Measure: fmt.Sprintf("%s, %d MB, p50", tr.name, tr.t.MB), Local: tr.t.text(tr.t.Local),
				Baseline: "runsc exec " + tr.t.text(tr.t.Runsc), Ratio: Ratio(tr.t.Local.P50, tr.t.Runsc.P50)}
			if tr.name == "stdout of a command" {
				row.Target, row.Met = maxRatio(row.Ratio, 2)
			}
			rows = append(rows, row)
		}
	}
	if s := r.State; s != nil {
		rows = append(rows, s.rows()...)
	}
	if c := r.Code; c != nil {
		rows = append(rows, c.rows()...)
	}
	if b := r.E2B; b != nil {
		rows = append(rows, b.rows()...)
	}
	if s := r.SDK; s != nil {
		rows = append(rows, s.rows()...)
	}
	if p := r.Preview; p != nil {
		rows = append(rows, p.rows()...)
	}
	return rows
}

// rows are the preview benchmark's lines of the table, each against its
// goal: a small request ≤ 1.3× direct at p50, a download at ≥ 0.9× the
// direct throughput (≤ 1.11× its time), a wake by request ≤ 1.3× resume.
func (p *PreviewResult) rows() []Row {
	var rows []Row
	if s := p.Small; s.Preview.N > 0 {
		t, met := maxRatio(Ratio(s.Preview.P50, s.Direct.P50), 1.3)
		rows = append(rows,
			Row{"preview small request p50", msText(s.Preview.P50), "direct " + msText(s.Direct.P50), Ratio(s.Preview.P50, s.Direct.P50), t + " direct", met},
			Row{"preview small request p95", msText(s.Preview.P95), "direct " + msText(s.Direct.P95), Ratio(s.Preview.P95, s.Direct.P95), "", nil})
		if b := p.BareProxy; b.N > 0 {
			// A hop alone costs about what the goal above allows on a small
			// host: sbx's own cost is what it adds to a bare hop.
			t, met := maxRatio(Ratio(s.Preview.P50, b.P50), 1.3)
			rows = append(rows, Row{"preview small request p50", msText(s.Preview.P50), "bare Go reverse proxy " + msText(b.P50) + " (the floor of a hop)", Ratio(s.Preview.P50, b.P50), t + " bare hop (proposed)", met})
		}
	}
	if d := p.Download; d.Preview.N > 0 {
		t := Transfer{MB: d.MB, Pair: Pair{d.Preview, d.Direct}}
		ratio := Ratio(d.Preview.P50, d.Direct.P50)
		met := ratio > 0 && ratio <= 1/0.9
		rows = append(rows, Row{fmt.Sprintf("preview download, %d MB, p50", d.MB), t.text(d.Preview), "direct " + t.text(d.Direct), ratio, "≥ 0.9× direct throughput", &met})
	}
	if w := p.Wake; w.ByRequest.N > 0 {
		t, met := maxRatio(Ratio(w.ByRequest.P50, w.Resume.P50), 1.3)
		rows = append(rows, Row{fmt.Sprintf("wake %d MB by a preview request p50", w.SizeMB), msText(w.ByRequest.P50), "sbx sandbox resume " + msText(w.Resume.P50),
			Ratio(w.ByRequest.P50, w.Resume.P50), t + " resume", met})
	}
	return rows
}

// text is a transfer's time at p50 and the rate it makes.
func (t Transfer) text(s Stat) string { return fmt.Sprintf("%.0f ms, %.0f MB/s", s.P50, t.rate(s)) }

// notes says what the table cannot: where the idle memory was found, how
// fast sandboxes were created while filling the host, and how much memory
// the hibernated sandboxes held.
func (r *Report) notes() []string {
	var notes []string
	if k := r.Kubernetes; k != nil {
		notes = append(notes, k.notes()...)
	}
	from := 0
	for _, i := range r.Idle {
		where := fmt.Sprintf("all %d runsc processes (sandbox and gofer of each) were inside their sandbox's memory cgroup, so the cgroups' usage (%.0f MB in all) is the whole figure; the processes' PSS sums to %.0f MB.",
			i.Processes, i.CgroupTotalMB, i.RunscPSSTotalMB)
		if i.OutsideProcesses > 0 {
			where = fmt.Sprintf("%d of %d runsc processes were outside their sandbox's memory cgroup; their PSS (%.0f MB) is added to the cgroups' usage (%.0f MB).",
				i.OutsideProcesses, i.Processes, i.OutsideTotalMB, i.CgroupTotalMB)
		}
		notes = append(notes, fmt.Sprintf("Idle, %d held: %s Creating sandboxes %d to %d, two at a time, took p50 %.0f ms, p95 %.0f ms each.",
			i.Count, where, from+1, i.Count, i.Create.P50, i.Create.P95))
		from = i.Count
	}
	for _, h := range r.Hibernate {
		notes = append(notes, fmt.Sprintf("Hibernate %d MB: the sandbox's cgroup held %.0f MB (gVisor counted %.0f MB) before, %.0f MB right after wake; the baseline's checkpoint image is %.0f MB.",
			h.SizeMB, h.CgroupMB, h.GuestMB, h.AfterWakeMB, h.RunscImageMB))
	}
	return notes
}

// cells renders a row's ratio and whether it met its target ("-" when it has
// none), a miss as missed.
func (row Row) cells(missed string) (ratio, met string) {
	ratio, met = "-", "-"
	if row.Ratio > 0 {
		ratio = fmt.Sprintf("%.2f×", row.Ratio)
	}
	if row.Met != nil {
		met = map[bool]string{true: "yes", false: missed}[*row.Met]
	}
	return ratio, met
}

func msText(v float64) string { return fmt.Sprintf("%.1f ms", v) }

// WriteTable writes the report as an aligned table, then its notes.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "%s  %s  runsc %s  template %s\n%s\n\n", r.Date, r.Host, r.Runsc, r.Template, r.Load)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MEASURE\tSBX LOCAL\tBASELINE OR CROSS-CHECK (SAME RUN)\tRATIO\tTARGET\tMET")
	for _, row := range r.Rows {
		ratio, met := row.cells("NO")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", row.Measure, row.Local, row.Baseline, ratio, orDash(row.Target), met)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "\n"+wrap(n, 78))
	}
	return nil
}

// WriteMarkdown writes the table as Markdown, for docs/BENCHMARKS.md.
func (r *Report) WriteMarkdown(w io.Writer) error {
	fmt.Fprintln(w, "| measure | sbx local | baseline or cross-check (same run) | ratio | target | met |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, row := range r.Rows {
		ratio, met := row.cells("**no**")
		_, err := fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", row.Measure, row.Local, row.Baseline, ratio, orDash(row.Target), met)
		if err != nil {
			return err
		}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// wrap breaks text into lines of at most width runes, at spaces.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for i, word := range strings.Fields(text) {
		if i > 0 && n+1+len([]rune(word)) > width {
			b.WriteString("\n")
			n = 0
		} else if i > 0 {
			b.WriteString(" ")
			n++
		}
		b.WriteString(word)
		n += len([]rune(word))
	}
	return b.String()
}

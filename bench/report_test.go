package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestPercentileIsNearestRank(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		var out []time.Duration
		for _, x := range xs {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	twenty := ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20)
	for _, c := range []struct {
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{nil, 50, 0},
		{ms(7), 50, 7 * time.Millisecond},
		{ms(7), 95, 7 * time.Millisecond},
		{ms(1, 2), 50, 1 * time.Millisecond},
		{ms(1, 2, 3), 50, 2 * time.Millisecond},
		{twenty, 50, 10 * time.Millisecond},
		{twenty, 95, 19 * time.Millisecond},
		{twenty, 100, 20 * time.Millisecond},
		{twenty, 1, 1 * time.Millisecond},
	} {
		if got := Percentile(c.sorted, c.p); got != c.want {
			t.Errorf("Percentile(%v, %v) = %v, want %v", c.sorted, c.p, got, c.want)
		}
	}
}

func TestNewStatSortsACopy(t *testing.T) {
	samples := []time.Duration{30 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond}
	s := NewStat(samples)
	if s.N != 4 || s.P50 != 20 || s.P95 != 40 {
		t.Errorf("NewStat = %+v, want n 4, p50 20 ms, p95 40 ms", s)
	}
	if samples[0] != 30*time.Millisecond {
		t.Error("NewStat reordered its argument")
	}
}

func TestRatio(t *testing.T) {
	if r := Ratio(150, 100); r != 1.5 {
		t.Errorf("Ratio(150, 100) = %v", r)
	}
	if r := Ratio(150, 0); r != 0 {
		t.Errorf("a missing baseline gave ratio %v, want none", r)
	}
}

func TestRowsJudgeTargets(t *testing.T) {
	r := &Report{
		Create: &CreateResult{Local: Stat{N: 20, P50: 130, P95: 200}, Runsc: Stat{N: 20, P50: 100, P95: 150},
			Runc: &Stat{N: 20, P50: 40}, DockerSkipped: "dockerd not running"},
		Pause:     &PauseResult{Pause: Stat{P50: 12}, Resume: Stat{P50: 31}, RunscPause: Stat{P50: 10}, RunscResume: Stat{P50: 10}},
		Hibernate: []HibernateResult{{SizeMB: 64, Wake: Stat{P50: 250}, RunscRestore: Stat{P50: 200}}, {SizeMB: 512, Wake: Stat{P50: 900}}},
		Idle:      []IdleResult{{Count: 50, PerSandboxMB: 15.5}, {Count: 200, PerSandboxMB: 16.5}},
	}
	r.Rows = r.rows()
	met := map[string]string{}
	for _, row := range r.Rows {
		if row.Met != nil {
			met[row.Measure] = map[bool]string{true: "yes", false: "no"}[*row.Met]
		}
	}
	want := map[string]string{
		"create→running p50":                     "no", // 1.3× runsc
		"pause p50":                              "yes",
		"resume p50":                             "no",
		"wake 64 MB p50":                         "yes",
		"host memory per idle sandbox, 50 held":  "yes",
		"host memory per idle sandbox, 200 held": "no",
	}
	for k, v := range want {
		if met[k] != v {
			t.Errorf("%s met: %q, want %q (all: %v)", k, met[k], v, met)
		}
	}
	if len(met) != len(want) {
		t.Errorf("rows with targets: %v, want %v", met, want)
	}
	if got := r.Rows[0].Ratio; got != 1.3 {
		t.Errorf("create ratio %v, want 1.3", got)
	}

	if notes := r.notes(); len(notes) != len(r.Idle)+len(r.Hibernate) {
		t.Errorf("notes: %q", notes)
	}

	var table, md bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"130.0 ms", "runsc run 100.0 ms", "1.30×", "runc run 40.0 ms", "3.25×", "docker: dockerd not running", "NO", "≤ 16 MB"} {
		if !strings.Contains(table.String(), s) {
			t.Errorf("the table lacks %q:\n%s", s, table.String())
		}
	}
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(md.String(), "\n"); lines != len(r.Rows)+2 {
		t.Errorf("markdown has %d lines for %d rows:\n%s", lines, len(r.Rows), md.String())
	}
}

// What a run did not measure, because it stopped before, has no row.
func TestExecRowsOnlyForWhatWasMeasured(t *testing.T) {
	r := &Report{Exec: &ExecResult{RoundTrip: Pair{Local: Stat{N: 3, P50: 4}, Runsc: Stat{N: 3, P50: 10}}}}
	rows := r.rows()
	if len(rows) != 2 || rows[0].Met == nil || !*rows[0].Met {
		t.Errorf("rows: %+v", rows)
	}
	if rows := (&Report{Exec: &ExecResult{}}).rows(); len(rows) != 0 {
		t.Errorf("rows of nothing measured: %+v", rows)
	}
}

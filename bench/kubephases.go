package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// kubeContender is one kind of create of the kubernetes part: the
// provider's, a bare pod's, a bare pod's with a claim.
type kubeContender struct {
	name   string
	kind   string // the first letter of its pods' names
	create func(ctx context.Context, id string) (time.Duration, error)
	remove func(ctx context.Context, id string) error
	pod    func(id string) string // the pod's name, in the observer's marks
	claims bool                   // its creates make claims

	samples, wall []time.Duration
	marks, pmarks map[string][]time.Duration // of the sequential creates, and of the parallel ones
}

// The marks the contenders set themselves, after the observer's.
const (
	markReturned = "Create returned"
	markAgent    = "agent ready"
	markReady    = "Ready"
)

// claimsQuiet is how long the parallel part waits after removing a batch
// of claims.
const claimsQuiet = 4 * time.Second

var markOrder = []string{markBound, markScheduled, markRunning, markReturned, markAgent, markReady}

func (k *kubeLab) contenders() []*kubeContender {
	same := func(id string) string { return id }
	return []*kubeContender{
		{name: "sbx kubernetes", kind: "s", create: k.sbxCreate, remove: k.sbxRemove, pod: podOf, claims: true},
		{name: "bare pod", kind: "p", create: k.podKind(podBare), remove: k.podRemove, pod: same},
		{name: "kubectl-run pod", kind: "t", create: k.podKind(podToken), remove: k.podRemove, pod: same},
		{name: "bare pod + claim", kind: "c", create: k.podKind(podClaim), remove: k.podRemove, pod: same, claims: true},
	}
}

func (k *kubeLab) podKind(kind podKind) func(context.Context, string) (time.Duration, error) {
	return func(ctx context.Context, id string) (time.Duration, error) { return k.podRun(ctx, id, kind) }
}

// sequential creates N of each contender one at a time, in turns, after
// one untimed warm-up of each; every create is removed, and gone, before
// the next.
func (k *kubeLab) sequential(ctx context.Context, res *KubernetesResult) error {
	cs := k.contenders()
	k.cfg.progress("kubernetes: namespace %s, %s; warming up", k.k.Namespace, res.Cluster)
	for _, c := range cs {
		if _, err := k.once(ctx, c); err != nil {
			return fmt.Errorf("%s warm-up: %w", c.name, err)
		}
		c.samples, c.marks = nil, nil
	}
	for i := range k.cfg.N {
		var line []string
		err := inTurn(i, len(cs), func(j int) error {
			took, err := k.once(ctx, cs[j])
			line = append(line, cs[j].name+" "+round(took))
			return err
		})
		if err != nil {
			return err
		}
		k.cfg.progress("kubernetes %d/%d: %s", i+1, k.cfg.N, strings.Join(line, ", "))
	}
	res.Create, res.Pod, res.PodToken, res.PodClaim = NewStat(cs[0].samples), NewStat(cs[1].samples), NewStat(cs[2].samples), NewStat(cs[3].samples)
	res.Split = split(cs, func(c *kubeContender) map[string][]time.Duration { return c.marks })
	return nil
}

// split is the contenders' marks in order.
func split(cs []*kubeContender, marks func(*kubeContender) map[string][]time.Duration) []Mark {
	var out []Mark
	for _, c := range cs {
		for _, what := range markOrder {
			if s := marks(c)[what]; len(s) > 0 {
				out = append(out, Mark{Contender: c.name, What: what, At: NewStat(s)})
			}
		}
	}
	return out
}

// keep adds the observer's marks of id's create to marks.
func (k *kubeLab) keep(marks *map[string][]time.Duration, c *kubeContender, id string) {
	if *marks == nil {
		*marks = map[string][]time.Duration{}
	}
	for what, at := range k.seen.of(c.pod(id)) {
		(*marks)[what] = append((*marks)[what], at)
	}
}

// once times one create of c, keeps its time and marks, and removes it.
func (k *kubeLab) once(ctx context.Context, c *kubeContender) (time.Duration, error) {
	id := k.id(c.kind)
	took, err := c.create(ctx, id)
	err = k.removeAll(ctx, c, []string{id}, err)
	if err != nil {
		return took, fmt.Errorf("%s %s: %w", c.name, id, err)
	}
	c.samples = append(c.samples, took)
	k.keep(&c.marks, c, id)
	return took, nil
}

// removeAll removes c's creates ids and waits until the namespace is
// empty, untimed; err is the creates', joined to any of the removal.
func (k *kubeLab) removeAll(ctx context.Context, c *kubeContender, ids []string, err error) error {
	rctx := context.WithoutCancel(ctx)
	for _, id := range ids {
		if rerr := c.remove(rctx, id); err == nil {
			err = rerr
		}
	}
	if ctx.Err() != nil {
		return err // close deletes the namespace
	}
	if serr := k.settle(ctx); err == nil {
		err = serr
	}
	return err
}

// parallel times Parallel creates of each contender at once, Rounds times
// in turns: the wall time until all are ready.
func (k *kubeLab) parallel(ctx context.Context, res *KubernetesResult) error {
	cs := k.contenders()
	for i := range k.cfg.Rounds {
		var line []string
		err := inTurn(i, len(cs), func(j int) error {
			took, err := k.together(ctx, cs[j])
			line = append(line, fmt.Sprintf("%d %s %s", k.k.Parallel, cs[j].name, round(took)))
			return err
		})
		if err != nil {
			return err
		}
		k.cfg.progress("kubernetes at once %d/%d: %s", i+1, k.cfg.Rounds, strings.Join(line, ", "))
	}
	res.ParallelCreate, res.ParallelPod, res.ParallelPodToken, res.ParallelPodClaim = NewStat(cs[0].wall), NewStat(cs[1].wall), NewStat(cs[2].wall), NewStat(cs[3].wall)
	res.ParallelSplit = split(cs, func(c *kubeContender) map[string][]time.Duration { return c.pmarks })
	return nil
}

// together starts Parallel creates of c at once and times them until the
// last is ready.
func (k *kubeLab) together(ctx context.Context, c *kubeContender) (time.Duration, error) {
	ids := make([]string, k.k.Parallel)
	for i := range ids {
		ids[i] = k.id(c.kind)
	}
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	start := time.Now()
	for i, id := range ids {
		wg.Go(func() { _, errs[i] = c.create(ctx, id) })
	}
	wg.Wait()
	took := time.Since(start)
	var err error
	if i := slices.IndexFunc(errs, func(e error) bool { return e != nil }); i >= 0 {
		err = fmt.Errorf("%s %s: %w", c.name, ids[i], errs[i])
	}
	if err = k.removeAll(ctx, c, ids, err); err != nil {
		return took, err
	}
	if c.claims {
		// Claims made within about 3 s of the last batch's volumes going
		// bind about 1.5 s later (measured on the test cluster's volume
		// controller), whichever contender comes next: it idles first.
		if err := sleep(ctx, claimsQuiet); err != nil {
			return took, err
		}
	}
	c.wall = append(c.wall, took)
	for _, id := range ids {
		k.keep(&c.pmarks, c, id)
	}
	return took, nil
}

// rows are the kubernetes part's lines of the table, against the issue's
// goal: a create ≤ 1.3× a bare gVisor pod's, one at a time and Parallel at
// once; and against the proposed one, ≤ 1.3× a bare pod with its claim
// (made as the provider makes it), since a pod with any volume waits for
// the kubelet's volume manager and claims bind one after another
// (docs/BENCHMARKS.md): what sbx adds to what its claim costs.
func (r *KubernetesResult) rows() []Row {
	var rows []Row
	add := func(measure string, c, pod, token, claim Stat, n string) {
		t, met := maxRatio(Ratio(c.P50, pod.P50), 1.3)
		ct, cmet := maxRatio(Ratio(c.P50, claim.P50), 1.3)
		pods, claims, kubectl := "bare pod ", "bare pod + claim ", "kubectl-run pod (a token volume) "
		if n != "" {
			pods, claims, kubectl = n+" bare pods ", n+" bare pods + claims ", n+" kubectl-run pods (a token volume each) "
		}
		rows = append(rows,
			Row{measure, msText(c.P50), pods + msText(pod.P50), Ratio(c.P50, pod.P50), t + " bare pod", met},
			Row{measure, msText(c.P50), claims + msText(claim.P50), Ratio(c.P50, claim.P50), ct + " bare pod + claim (proposed)", cmet},
			Row{measure, msText(c.P50), kubectl + msText(token.P50), Ratio(c.P50, token.P50), "", nil})
	}
	if c := r.Create; c.N > 0 {
		add("sbx kubernetes create→ready p50", c, r.Pod, r.PodToken, r.PodClaim, "")
		rows = append(rows, Row{"sbx kubernetes create→ready p95", msText(c.P95), "bare pod + claim " + msText(r.PodClaim.P95), Ratio(c.P95, r.PodClaim.P95), "", nil})
	}
	if c := r.ParallelCreate; c.N > 0 {
		n := fmt.Sprint(r.Parallel)
		add(n+" sbx kubernetes creates at once→all ready p50", c, r.ParallelPod, r.ParallelPodToken, r.ParallelPodClaim, n)
	}
	return rows
}

// notes are the cluster, and where the creates' time went.
func (r *KubernetesResult) notes() []string {
	notes := []string{fmt.Sprintf("Kubernetes: %s; namespace %s (made and deleted by the run), image %s, StorageClass %s.",
		r.Cluster, r.Namespace, r.Image, orDefault(r.StorageClass))}
	for _, s := range []struct {
		what  string
		marks []Mark
	}{{"one at a time", r.Split}, {fmt.Sprintf("%d at once", r.Parallel), r.ParallelSplit}} {
		by := map[string][]string{}
		var order []string
		for _, m := range s.marks {
			if by[m.Contender] == nil {
				order = append(order, m.Contender)
			}
			by[m.Contender] = append(by[m.Contender], fmt.Sprintf("%s %.0f/%.0f ms", m.What, m.At.P50, m.At.P95))
		}
		for _, c := range order {
			notes = append(notes, fmt.Sprintf("Where a %s create's time goes, %s, p50/p95 from its start (seen through a watch): %s.", c, s.what, strings.Join(by[c], ", ")))
		}
	}
	return notes
}

func orDefault(class string) string {
	if class == "" {
		return "(the cluster's default)"
	}
	return class
}

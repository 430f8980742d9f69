package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/sbxdev/sbx/template"
)

// StateResult is the branching of state through serve's API against its
// floors: a create that checks a sandbox out of a warm pool against a cold
// create; a create of a template whose start command takes StartS seconds
// from its ready snapshot against a cold create plus that start; a
// snapshot of a sandbox holding HeldMB against `runsc checkpoint
// --leave-running` of it; a fork of it into Children against one runsc
// checkpoint and as many `runsc restore`s of it at once.
type StateResult struct {
	Pool      Pair    `json:"pool_create"` // Local: from the warm pool; Runsc: cold
	StartS    float64 `json:"start_s"`
	Ready     Pair    `json:"ready_create"` // Local: from the ready snapshot, serving; Runsc: cold, serving
	HeldMB    int     `json:"held_mb"`
	Snapshot  Pair    `json:"snapshot"`           // Local: POST …/snapshots; Runsc: runsc checkpoint --leave-running
	PausedMs  Stat    `json:"snapshot_paused_ms"` // how long the source stood still, as serve reports it
	Children  int     `json:"children"`
	Fork      Pair    `json:"fork"` // Local: POST …/fork, all running; Runsc: checkpoint + that many restores at once
	ImageMB   float64 `json:"image_mb"`
	RestoreMs Stat    `json:"runsc_restores_ms"` // the restores alone
}

// slowTemplate is the template State derives from cfg.Template: its start
// command serves HTTP on port 8080 after StartS seconds.
const slowTemplate = "bench-slow-start"

// State runs the state benchmark on a real serve in this process.
func State(ctx context.Context, cfg Config) (*Report, error) {
	return inLab(ctx, cfg, "state", func(e *execLab, r *Report) error {
		r.State = &StateResult{StartS: 2, HeldMB: 256, Children: 10}
		for _, phase := range []func(context.Context, *StateResult) error{e.pool, e.ready, e.snapshot, e.fork} {
			if err := phase(ctx, r.State); err != nil {
				return err
			}
		}
		return nil
	})
}

// pool times Rounds creates from a warm pool of that many, then as many cold.
func (e *execLab) pool(ctx context.Context, res *StateResult) error {
	n := e.cfg.Rounds * 2
	size, disk := int64(256), int64(512)
	if _, err := e.c.SetWarmPool(ctx, e.cfg.Template, apiv1.SetWarmPoolRequest{MinReady: n, MaxReady: n, MemoryMB: &size, DiskMB: &disk}); err != nil {
		return err
	}
	defer e.c.DeleteWarmPool(context.WithoutCancel(ctx), e.cfg.Template)
	e.cfg.progress("warm pool: waiting for %d ready", n)
	if err := e.waitPool(ctx, n); err != nil {
		return err
	}
	// No refill from here: the cold creates run on a host as quiet as the
	// checkouts found it.
	if _, err := e.c.SetWarmPool(ctx, e.cfg.Template, apiv1.SetWarmPoolRequest{MinReady: 0, MaxReady: n, MemoryMB: &size, DiskMB: &disk}); err != nil {
		return err
	}
	create := func(mode string) (time.Duration, error) {
		start := time.Now()
		sb, err := e.c.Create(ctx, e.cfg.Template, &client.CreateOptions{WaitReady: true, MemoryMB: size, DiskMB: disk, WarmPool: mode, EnvVars: map[string]string{"N": "1"}})
		took := time.Since(start)
		if err == nil {
			err = sb.Delete(ctx)
		}
		return took, err
	}
	var warm, cold []time.Duration
	for i := range n {
		d, err := create("require")
		if err != nil {
			return fmt.Errorf("create %d from the warm pool: %w", i, err)
		}
		warm = append(warm, d)
	}
	for i := range n {
		d, err := create("bypass")
		if err != nil {
			return fmt.Errorf("cold create %d: %w", i, err)
		}
		cold = append(cold, d)
	}
	res.Pool = Pair{Local: NewStat(warm), Runsc: NewStat(cold)}
	e.cfg.progress("create from the warm pool p50 %.2f ms, cold p50 %.1f ms", res.Pool.Local.P50, res.Pool.Runsc.P50)
	return nil
}

func (e *execLab) waitPool(ctx context.Context, n int) error {
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		l, err := e.c.WarmPools(ctx)
		if err != nil {
			return err
		}
		for _, p := range l.Items {
			if p.Template == e.cfg.Template && p.Ready >= n {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("the warm pool did not fill within 5 minutes")
}

// ready times Rounds creates of slowTemplate until its server answers:
// cold, then from its ready snapshot.
func (e *execLab) ready(ctx context.Context, res *StateResult) error {
	start := fmt.Sprintf("sleep %g; exec /.sbx/sbx agent echo 8080", res.StartS)
	if err := derive(e.cfg.Templates, slowTemplate, e.cfg.Template, start); err != nil {
		return err
	}
	serving := func() (time.Duration, error) {
		began := time.Now()
		sb, err := e.c.Create(ctx, slowTemplate, &client.CreateOptions{WaitReady: true, MemoryMB: 256, DiskMB: 512, WarmPool: "bypass"})
		if err != nil {
			return 0, err
		}
		defer sb.Delete(context.WithoutCancel(ctx))
		r, err := sb.Commands.Run(ctx, "until : </dev/tcp/127.0.0.1/8080; do sleep 0.02; done 2>/dev/null", nil)
		if err == nil && r.ExitCode != 0 {
			err = fmt.Errorf("waiting for port 8080: exit %d", r.ExitCode)
		}
		return time.Since(began), err
	}
	var cold, warm []time.Duration
	for range e.cfg.Rounds {
		d, err := serving()
		if err != nil {
			return fmt.Errorf("cold create of %s: %w", slowTemplate, err)
		}
		cold = append(cold, d)
	}
	mem, disk := int64(256), int64(512)
	if _, err := e.c.PrepareTemplate(ctx, slowTemplate, apiv1.PrepareTemplateRequest{Port: 8080, MemoryMB: &mem, DiskMB: &disk}); err != nil {
		return err
	}
	defer e.c.DropReadyTemplate(context.WithoutCancel(ctx), slowTemplate)
	for {
		st, err := e.c.ReadyTemplate(ctx, slowTemplate)
		if err != nil {
			return err
		}
		if st.State == "failed" {
			return errors.New(st.Diagnostic)
		}
		if st.State == "ready" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for range e.cfg.Rounds {
		d, err := serving()
		if err != nil {
			return fmt.Errorf("create of %s from its ready snapshot: %w", slowTemplate, err)
		}
		warm = append(warm, d)
	}
	res.Ready = Pair{Local: NewStat(warm), Runsc: NewStat(cold)}
	e.cfg.progress("create serving from a ready snapshot p50 %.1f ms, cold p50 %.1f ms", res.Ready.Local.P50, res.Ready.Runsc.P50)
	return nil
}

// derive makes template name from base with start command start, unless
// the store has it so.
func derive(s template.Store, name, base, start string) error {
	if t, err := s.Current(name); err == nil && t.StartCmd == start {
		return nil
	}
	_, err := s.Derive(name, base, start)
	return err
}

// fill has the lab's sandbox hold mb of random bytes in its memory.
func (e *execLab) fill(ctx context.Context, mb int) error {
	r, err := e.sb.Commands.Run(ctx, fmt.Sprintf("head -c %dM /dev/urandom > /tmp/fill", mb), nil) // gVisor's /tmp is in memory
	if err == nil && r.ExitCode != 0 {
		err = fmt.Errorf("filling %d MB: exit %d: %s", mb, r.ExitCode, r.Stderr)
	}
	return err
}

// snapshot times Rounds snapshots of the sandbox holding HeldMB, in turns
// with `runsc checkpoint --leave-running` of it.
func (e *execLab) snapshot(ctx context.Context, res *StateResult) error {
	if err := e.fill(ctx, res.HeldMB); err != nil {
		return err
	}
	flags, err := e.flags()
	if err != nil {
		return err
	}
	var local, raw, paused []time.Duration
	for i := range e.cfg.Rounds {
		err := inTurn(i, 2, func(k int) error {
			if k == 1 {
				img := filepath.Join(e.dir, "bench-image")
				os.RemoveAll(img)
				start := time.Now()
				if _, err := e.rs.Run(ctx, flags, "checkpoint", "--leave-running", "--image-path", img, "--compression=none", e.sb.SandboxID()); err != nil {
					return err
				}
				raw = append(raw, time.Since(start))
				res.ImageMB = mib(dirSize(img))
				return os.RemoveAll(img)
			}
			start := time.Now()
			sn, err := e.c.Snapshot(ctx, e.sb.ID(), nil)
			if err != nil {
				return err
			}
			local = append(local, time.Since(start))
			paused = append(paused, time.Duration(sn.PausedMs)*time.Millisecond)
			_, err = e.c.DeleteSnapshot(ctx, sn.ID)
			return err
		})
		if err != nil {
			return err
		}
	}
	res.Snapshot, res.PausedMs = Pair{Local: NewStat(local), Runsc: NewStat(raw)}, NewStat(paused)
	e.cfg.progress("snapshot of %d MB p50 %.1f ms (stood still %.1f ms), runsc checkpoint --leave-running p50 %.1f ms",
		res.HeldMB, res.Snapshot.Local.P50, res.PausedMs.P50, res.Snapshot.Runsc.P50)
	return nil
}

// fork times Rounds forks of the sandbox into Children, in turns with a
// runsc checkpoint of a container holding as much, run by runsc from a
// bundle like the sandbox's (without a network), and Children `runsc
// restore`s of that image at once.
func (e *execLab) fork(ctx context.Context, res *StateResult) error {
	raw, err := e.rawSource(ctx, res.HeldMB)
	if err != nil {
		return err
	}
	defer e.rs.Run(context.WithoutCancel(ctx), nil, "delete", "--force", rawSource)
	var local, whole, restores []time.Duration
	for i := range e.cfg.Rounds {
		err := inTurn(i, 2, func(k int) error {
			if k == 1 {
				total, each, err := e.rawFork(ctx, raw, res.Children, i)
				whole, restores = append(whole, total), append(restores, each)
				return err
			}
			start := time.Now()
			f, err := e.c.Fork(ctx, e.sb.ID(), res.Children)
			took := time.Since(start)
			if err == nil && len(f.Children) != res.Children {
				err = fmt.Errorf("fork made %d of %d children: %v", len(f.Children), res.Children, f.Errors)
			}
			if f != nil {
				for _, ch := range f.Children {
					e.c.Delete(context.WithoutCancel(ctx), ch.ID)
				}
			}
			local = append(local, took)
			return err
		})
		if err != nil {
			return err
		}
	}
	res.Fork, res.RestoreMs = Pair{Local: NewStat(local), Runsc: NewStat(whole)}, NewStat(restores)
	e.cfg.progress("fork into %d p50 %.0f ms, runsc checkpoint + %d restores p50 %.0f ms", res.Children, res.Fork.Local.P50, res.Children, res.Fork.Runsc.P50)
	return nil
}

// rawSource is the container the fork's baseline checkpoints.
const rawSource = "zbenchsrc"

// rawSource runs, with runsc alone, a container like the sandbox (its
// root, limits and runsc flags, but no network and no agent) whose first
// process holds mb in memory, and answers its bundle once it does.
func (e *execLab) rawSource(ctx context.Context, mb int) (specs.Spec, error) {
	var spec specs.Spec
	data, err := os.ReadFile(filepath.Join(e.dir, "sandboxes", e.sb.SandboxID(), "bundle", "config.json"))
	if err == nil {
		err = json.Unmarshal(data, &spec)
	}
	if err != nil {
		return spec, err
	}
	spec.Process.Args = []string{"/bin/bash", "-c", fmt.Sprintf("head -c %dM /dev/urandom > /tmp/fill && exec sleep infinity", mb)}
	var mounts []specs.Mount
	for _, m := range spec.Mounts {
		if m.Type != "bind" {
			mounts = append(mounts, m)
		}
	}
	spec.Mounts = mounts
	if err := e.writeBundle(spec, rawSource); err != nil {
		return spec, err
	}
	if err := e.start(ctx, rawSource, "run", "--detach", "--bundle", filepath.Join(e.dir, "bench-raw", rawSource), rawSource); err != nil {
		return spec, err
	}
	want := fmt.Sprint(int64(mb) << 20)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		out, _ := e.rs.Run(ctx, nil, "exec", rawSource, "stat", "-c", "%s", "/tmp/fill")
		if strings.TrimSpace(string(out)) == want {
			return spec, nil
		}
	}
	return spec, fmt.Errorf("runsc container %s did not fill %d MB within a minute", rawSource, mb)
}

// writeBundle writes spec, its cgroup and network its own, as container
// id's bundle under bench-raw/.
func (e *execLab) writeBundle(spec specs.Spec, id string) error {
	b := spec
	lx := *spec.Linux
	b.Linux = &lx
	b.Linux.CgroupsPath = "/" + e.cfg.Name + "raw/" + id
	b.Linux.Namespaces = nil
	for _, ns := range spec.Linux.Namespaces {
		if ns.Type != specs.NetworkNamespace {
			b.Linux.Namespaces = append(b.Linux.Namespaces, ns)
		}
	}
	dir := filepath.Join(e.dir, "bench-raw", id)
	if err := os.MkdirAll(filepath.Join(dir, "upper"), 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(&b)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), data, 0o600)
}

// start runs a runsc command that starts baseline container id (run or
// restore, detached), its output to a file: a pipe would be held open by
// the container.
func (e *execLab) start(ctx context.Context, id string, args ...string) error {
	out, err := os.OpenFile(filepath.Join(e.dir, "bench-raw", id+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	return e.rs.Start(ctx, e.rawFlags(id), out, args...)
}

// rawFlags are a baseline container's runsc flags: no network, its own
// capped upper layer.
func (e *execLab) rawFlags(id string) []string {
	return []string{"--network=none", fmt.Sprintf("--overlay2=root:dir=%s,size=1024m", filepath.Join(e.dir, "bench-raw", id, "upper"))}
}

// rawFork checkpoints the baseline container with runsc and restores the
// image n times at once; it answers the whole and the restores' part,
// and removes what it made.
func (e *execLab) rawFork(ctx context.Context, spec specs.Spec, n, round int) (total, restores time.Duration, err error) {
	img := filepath.Join(e.dir, "bench-raw", fmt.Sprintf("image-%d", round))
	defer os.RemoveAll(img)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("zbench%dr%d", round, i)
		if err := e.writeBundle(spec, ids[i]); err != nil {
			return 0, 0, err
		}
	}
	defer func() {
		for _, id := range ids {
			e.rs.Run(context.WithoutCancel(ctx), nil, "delete", "--force", id)
			os.RemoveAll(filepath.Join(e.dir, "bench-raw", id))
		}
	}()
	start := time.Now()
	if _, err := e.rs.Run(ctx, e.rawFlags(rawSource), "checkpoint", "--leave-running", "--image-path", img, "--compression=none", rawSource); err != nil {
		return 0, 0, err
	}
	began := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, id := range ids {
		wg.Go(func() {
			errs[i] = e.start(ctx, id, "restore", "--detach", "--bundle", filepath.Join(e.dir, "bench-raw", id), "--image-path", img, id)
		})
	}
	wg.Wait()
	return time.Since(start), time.Since(began), errors.Join(errs...)
}

// flags are the sandbox's own runsc flags, as serve recorded them.
func (e *execLab) flags() ([]string, error) {
	var m struct {
		Flags []string `json:"flags"`
	}
	data, err := os.ReadFile(filepath.Join(e.dir, "sandboxes", e.sb.SandboxID(), "sandbox.json"))
	if err == nil {
		err = json.Unmarshal(data, &m)
	}
	return m.Flags, err
}

func dirSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

func (s *StateResult) rows() []Row {
	var rows []Row
	if p := s.Pool; p.Local.N > 0 {
		t, met := maxMs(p.Local.P50, 10)
		ratio := Ratio(p.Local.P50, p.Runsc.P50)
		rt, rmet := maxRatio(ratio, 0.1)
		rows = append(rows, Row{"create from a warm pool p50", msText(p.Local.P50), "cold create " + msText(p.Runsc.P50), ratio, t, met},
			Row{"create from a warm pool p50, ratio", msText(p.Local.P50), "cold create " + msText(p.Runsc.P50), ratio, rt + " cold", rmet})
	}
	if r := s.Ready; r.Local.N > 0 {
		ratio := Ratio(r.Local.P50, r.Runsc.P50)
		t, met := maxRatio(ratio, 0.2)
		rows = append(rows, Row{fmt.Sprintf("create serving, start %gs, ready snapshot p50", s.StartS), msText(r.Local.P50),
			"cold create + start " + msText(r.Runsc.P50), ratio, t + " cold + start", met})
	}
	if n := s.Snapshot; n.Local.N > 0 {
		ratio := Ratio(n.Local.P50, n.Runsc.P50)
		t, met := maxRatio(ratio, 1.2)
		rows = append(rows, Row{fmt.Sprintf("snapshot of %d MB p50", s.HeldMB), msText(n.Local.P50),
			"runsc checkpoint --leave-running " + msText(n.Runsc.P50), ratio, t + " runsc", met},
			Row{fmt.Sprintf("snapshot of %d MB: the source stood still, p50", s.HeldMB), msText(s.PausedMs.P50), fmt.Sprintf("image %.0f MB", s.ImageMB), 0, "reported", nil})
	}
	if f := s.Fork; f.Local.N > 0 {
		ratio := Ratio(f.Local.P50, f.Runsc.P50)
		t, met := maxRatio(ratio, 1.2)
		rows = append(rows, Row{fmt.Sprintf("fork of %d MB into %d, all running, p50", s.HeldMB, s.Children), msText(f.Local.P50),
			fmt.Sprintf("runsc checkpoint + %d restores at once %s", s.Children, msText(f.Runsc.P50)), ratio, t + " runsc", met})
		t2, met2 := maxMs(f.Local.P50, 1000)
		rows = append(rows, Row{fmt.Sprintf("fork of %d MB into %d, all running, p50", s.HeldMB, s.Children), msText(f.Local.P50),
			fmt.Sprintf("the %d restores alone %s", s.Children, msText(s.RestoreMs.P50)), 0, t2, met2})
	}
	return rows
}

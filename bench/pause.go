package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/sbxdev/sbx"
)

// PauseResult is the time of Pause and of Resume of a paused sandbox (the
// freezer: memory and processes stay), against `runsc pause` and `runsc
// resume` of a baseline container.
type PauseResult struct {
	Pause       Stat `json:"pause"`
	Resume      Stat `json:"resume"`
	RunscPause  Stat `json:"runsc_pause"`
	RunscResume Stat `json:"runsc_resume"`
}

// pause pauses and resumes one sandbox and one baseline container N times,
// and, when the run has the docker contender, one of its sandboxes and one
// of its baseline's containers.
func (l *lab) pause(ctx context.Context, r *Report) error {
	id := l.id("p")
	h, _, err := l.createLocal(ctx, l.main, id, memoryMB)
	if err != nil {
		return fmt.Errorf("local create %s: %w", id, err)
	}
	defer l.main.Kill(context.WithoutCancel(ctx), h)
	rid := l.id("q")
	if _, err := l.raw.run(ctx, l.tmpl.Rootfs(), rid, idleInit, memoryMB); err != nil {
		return err
	}
	defer l.raw.remove(context.WithoutCancel(ctx), rid)

	var dp *dockerPause
	if l.dk != nil {
		dp, err = l.dk.startPause(ctx, l)
		defer dp.close(context.WithoutCancel(ctx))
		if err != nil {
			return err
		}
	}

	var pause, resume, rawPause, rawResume []time.Duration
	steps := []func() error{
		func() error { return l.pauseResume(ctx, h, &pause, &resume) },
		func() error {
			d, err := l.raw.timed(ctx, rid, "pause", rid)
			if err != nil {
				return err
			}
			rawPause = append(rawPause, d)
			d, err = l.raw.timed(ctx, rid, "resume", rid)
			rawResume = append(rawResume, d)
			return err
		},
	}
	if dp != nil {
		steps = append(steps, dp.steps(ctx)...)
	}
	for i := range l.cfg.N {
		if err := inTurn(i, len(steps), func(k int) error { return steps[k]() }); err != nil {
			return err
		}
		line := fmt.Sprintf("local pause %s resume %s, runsc pause %s resume %s",
			round(pause[i]), round(resume[i]), round(rawPause[i]), round(rawResume[i]))
		if dp != nil {
			line += ", " + dp.last()
		}
		l.cfg.progress("pause %d/%d: %s", i+1, l.cfg.N, line)
	}
	r.Pause = &PauseResult{Pause: NewStat(pause), Resume: NewStat(resume), RunscPause: NewStat(rawPause), RunscResume: NewStat(rawResume)}
	if dp != nil {
		dp.fill(r.Docker)
	}
	return nil
}

// pauseResume times Pause and Resume of a sandbox of the main provider.
func (l *lab) pauseResume(ctx context.Context, h sbx.Handle, pause, resume *[]time.Duration) error {
	start := time.Now()
	if err := l.main.Pause(ctx, h); err != nil {
		return err
	}
	*pause = append(*pause, time.Since(start))
	start = time.Now()
	_, err := l.main.Resume(ctx, h)
	*resume = append(*resume, time.Since(start))
	return err
}

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

// pause pauses and resumes one sandbox and one baseline container N times.
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

	var pause, resume, rawPause, rawResume []time.Duration
	for i := range l.cfg.N {
		err := inTurn(i, 2, func(k int) error {
			if k == 0 {
				return l.pauseResume(ctx, h, &pause, &resume)
			}
			d, err := l.raw.timed(ctx, rid, "pause", rid)
			if err != nil {
				return err
			}
			rawPause = append(rawPause, d)
			d, err = l.raw.timed(ctx, rid, "resume", rid)
			rawResume = append(rawResume, d)
			return err
		})
		if err != nil {
			return err
		}
		l.cfg.progress("pause %d/%d: local pause %s resume %s, runsc pause %s resume %s", i+1, l.cfg.N,
			round(pause[i]), round(resume[i]), round(rawPause[i]), round(rawResume[i]))
	}
	r.Pause = &PauseResult{Pause: NewStat(pause), Resume: NewStat(resume), RunscPause: NewStat(rawPause), RunscResume: NewStat(rawResume)}
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

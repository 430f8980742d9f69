package bench

import (
	"context"
	"fmt"
	"os"
	"time"
)

// HibernateResult is hibernate (checkpoint to disk, container gone) and wake
// (restore) of a sandbox whose first process filled a tmpfs with SizeMB of
// random bytes, against `runsc checkpoint` + `runsc delete` and `runsc
// restore --detach` of a baseline container holding the same.
type HibernateResult struct {
	SizeMB int `json:"size_mb"`
	// The sandbox's memory cgroup usage and gVisor's own count (runsc
	// events --stats) once filled, and the cgroup usage right after the
	// last wake: a restore that loaded memory lazily would show less.
	CgroupMB     float64 `json:"cgroup_mb"`
	GuestMB      float64 `json:"guest_mb"`
	AfterWakeMB  float64 `json:"after_wake_cgroup_mb"`
	RunscImageMB float64 `json:"runsc_image_mb"` // size of the baseline's checkpoint

	Hibernate       Stat `json:"hibernate"`
	Wake            Stat `json:"wake"`
	RunscCheckpoint Stat `json:"runsc_checkpoint"`
	RunscRestore    Stat `json:"runsc_restore"`
}

// fill is a first process that holds mb of random bytes in /dev/shm (a
// tmpfs, so in the sandbox's memory), then idles.
func fill(mb int) []string {
	return []string{"/bin/bash", "-c", fmt.Sprintf("head -c %dM /dev/urandom > /dev/shm/fill && exec sleep infinity", mb)}
}

func (l *lab) hibernate(ctx context.Context, r *Report) error {
	for _, size := range l.cfg.SizesMB {
		h, err := l.hibernateSize(ctx, size)
		if err != nil {
			return err
		}
		r.Hibernate = append(r.Hibernate, h)
	}
	return nil
}

// hibernateSize hibernates and wakes one sandbox and one baseline container
// holding size MB, Rounds times each.
func (l *lab) hibernateSize(ctx context.Context, size int) (HibernateResult, error) {
	res := HibernateResult{SizeMB: size}
	mem := int64(size + memoryMB)
	p, err := l.provider(fill(size))
	if err != nil {
		return res, err
	}
	id := l.id("h")
	h, _, err := l.createLocal(ctx, p, id, mem)
	if err != nil {
		return res, fmt.Errorf("local create %s: %w", id, err)
	}
	defer p.Kill(context.WithoutCancel(ctx), h)
	rid := l.id("k")
	if _, err := l.raw.run(ctx, l.tmpl.Rootfs(), rid, fill(size), mem); err != nil {
		return res, err
	}
	defer l.raw.remove(context.WithoutCancel(ctx), rid)

	l.cfg.progress("hibernate %d MB: waiting for both to hold it", size)
	if res.GuestMB, err = waitFilled(ctx, size, func() (int64, error) {
		m, err := p.Metrics(ctx, h)
		return m.MemoryBytes, err
	}); err != nil {
		return res, fmt.Errorf("sandbox %s: %w", id, err)
	}
	if _, err := waitFilled(ctx, size, func() (int64, error) { return cgroupMemory(l.raw.cgroupParent, rid) }); err != nil {
		return res, fmt.Errorf("runsc container %s: %w", rid, err)
	}
	used, err := cgroupMemory(l.cfg.Name, id)
	if err != nil {
		return res, err
	}
	res.CgroupMB = mib(used)

	var hib, wake, ckpt, restore []time.Duration
	for i := range l.cfg.Rounds {
		err := inTurn(i, 2, func(k int) error {
			if k == 1 {
				return l.rawHibernateWake(ctx, rid, &res, &ckpt, &restore)
			}
			start := time.Now()
			if err := p.Hibernate(ctx, h); err != nil {
				return err
			}
			hib = append(hib, time.Since(start))
			start = time.Now()
			if _, err := p.Resume(ctx, h); err != nil {
				return err
			}
			wake = append(wake, time.Since(start))
			used, err := cgroupMemory(l.cfg.Name, id)
			res.AfterWakeMB = mib(used)
			return err
		})
		if err != nil {
			return res, err
		}
		l.cfg.progress("hibernate %d MB %d/%d: local hibernate %s wake %s, runsc checkpoint+delete %s restore %s", size, i+1, l.cfg.Rounds,
			round(hib[i]), round(wake[i]), round(ckpt[i]), round(restore[i]))
	}
	if _, err := p.Metrics(ctx, h); err != nil {
		return res, fmt.Errorf("sandbox %s after wake: %w", id, err)
	}
	res.Hibernate, res.Wake, res.RunscCheckpoint, res.RunscRestore = NewStat(hib), NewStat(wake), NewStat(ckpt), NewStat(restore)
	return res, nil
}

// rawHibernateWake times what Hibernate does with runsc (checkpoint, then
// delete the stopped container), then the restore, and removes the image
// as wake does.
func (l *lab) rawHibernateWake(ctx context.Context, id string, res *HibernateResult, ckpt, restore *[]time.Duration) error {
	image := l.raw.image(id)
	c, err := l.raw.timed(ctx, id, "checkpoint", "--image-path", image, "--compression=none", id)
	if err != nil {
		return err
	}
	d, err := l.raw.timed(ctx, id, "delete", "--force", id)
	if err != nil {
		return err
	}
	*ckpt = append(*ckpt, c+d)
	if res.RunscImageMB, err = dirMB(image); err != nil {
		return err
	}
	d, err = l.raw.timed(ctx, id, "restore", "--detach", "--bundle", l.raw.bundle(id), "--image-path", image, id)
	if err != nil {
		return err
	}
	*restore = append(*restore, d)
	return os.RemoveAll(image)
}

// waitFilled waits until used reports at least size MB and returns it in MB.
func waitFilled(ctx context.Context, size int, used func() (int64, error)) (float64, error) {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		n, err := used()
		if err != nil {
			return 0, err
		}
		if n >= int64(size)<<20 {
			return mib(n), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("holds %.1f MB after 3 minutes, not %d MB", mib(n), size)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

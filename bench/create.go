package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// CreateResult is create→running: from the call to its return with the
// first process started (`run --detach` returns then), for the local
// provider and each baseline.
type CreateResult struct {
	Local         Stat   `json:"local"`
	Runsc         Stat   `json:"runsc"`
	Runc          *Stat  `json:"runc,omitempty"`
	RuncSkipped   string `json:"runc_skipped,omitempty"`
	Docker        *Stat  `json:"docker,omitempty"`
	DockerSkipped string `json:"docker_skipped,omitempty"`
}

// contender is a way to start a container: create is timed, remove is not.
type contender struct {
	name    string
	create  func(ctx context.Context, id string) (time.Duration, error)
	remove  func(ctx context.Context, id string) error
	samples []time.Duration
}

// create creates N sandboxes one at a time with each contender in turn
// (the first of each round changing from round to round), and removes each
// before the next, so that every contender meets the same host. The docker
// provider and its `docker run` baseline (docker.go) are two more, warmed
// up once first: the template's import as an image is no create's.
func (l *lab) create(ctx context.Context, r *Report) error {
	rootfs := l.tmpl.Rootfs()
	cs := []*contender{
		{name: "local", create: func(ctx context.Context, id string) (time.Duration, error) {
			_, d, err := l.createLocal(ctx, l.main, id, memoryMB)
			return d, err
		}, remove: l.killLocal},
		{name: "runsc", create: func(ctx context.Context, id string) (time.Duration, error) {
			return l.raw.run(ctx, rootfs, id, idleInit, memoryMB)
		}, remove: l.raw.remove},
	}
	runc, dock := len(cs), len(cs)
	if l.runc != nil {
		cs = append(cs, &contender{name: "runc", create: func(ctx context.Context, id string) (time.Duration, error) {
			return l.runc.run(ctx, rootfs, id)
		}, remove: l.runc.remove})
		dock++
	}
	if l.dock != nil {
		cs = append(cs, &contender{name: "docker", create: func(ctx context.Context, id string) (time.Duration, error) {
			return l.dock.run(ctx, rootfs, id, filepath.Join(l.dir, "docker.log"))
		}, remove: l.dock.remove})
	}
	dk := len(cs)
	r.Docker = &DockerResult{Host: l.cfg.DockerHost, Skipped: l.noDk}
	if l.dk != nil {
		l.cfg.progress("create: importing %s into the Docker daemon at %s unless it has it, and warming up", l.dk.image, l.dk.host)
		if err := l.dk.warm(ctx, l); err != nil {
			return err
		}
		r.Docker.Image = l.dk.image
		cs = append(cs, l.dk.contenders(l)...)
	}
	for i := range l.cfg.N {
		err := inTurn(i, len(cs), func(k int) error {
			c := cs[k]
			id := l.id(c.name[:1])
			d, err := c.create(ctx, id)
			if err != nil {
				return fmt.Errorf("%s create %s: %w", c.name, id, err)
			}
			c.samples = append(c.samples, d)
			return c.remove(ctx, id)
		})
		if err != nil {
			return err
		}
		var line []string
		for _, c := range cs {
			line = append(line, c.name+" "+round(c.samples[i]))
		}
		l.cfg.progress("create %d/%d: %s", i+1, l.cfg.N, strings.Join(line, ", "))
	}
	c := &CreateResult{Local: NewStat(cs[0].samples), Runsc: NewStat(cs[1].samples), RuncSkipped: "runc is not installed", DockerSkipped: l.noDocker}
	if l.runc != nil {
		s := NewStat(cs[runc].samples)
		c.Runc, c.RuncSkipped = &s, ""
	}
	if l.dock != nil {
		s := NewStat(cs[dock].samples)
		c.Docker = &s
	}
	if l.dk != nil {
		r.Docker.Create, r.Docker.Run = NewStat(cs[dk].samples), NewStat(cs[dk+1].samples)
	}
	r.Create = c
	return nil
}

func round(d time.Duration) string { return d.Round(100 * time.Microsecond).String() }

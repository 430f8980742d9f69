package ledger

import (
	"context"
	"hash/fnv"
	"sync"
	"time"
)

// Lead runs fn while this process holds the lock named key among all the
// processes sharing the database, and waits its turn while another holds
// it, trying again every retry; it returns once ctx ends and fn has
// returned. On PostgreSQL the lock is a session advisory lock on a
// connection of its own: when the process holding it dies, PostgreSQL
// drops the connection and the lock with it, and a waiting process takes
// over. If that connection is lost while fn runs, fn's context is
// cancelled and Lead starts waiting again. A SQLite ledger belongs to one
// process, which leads at once.
func (s *Store) Lead(ctx context.Context, key int64, retry time.Duration, fn func(context.Context)) {
	if !s.pg {
		fn(ctx)
		return
	}
	for ctx.Err() == nil {
		s.leadOnce(ctx, key, retry, fn)
		select {
		case <-ctx.Done():
		case <-time.After(retry):
		}
	}
}

// leadOnce takes the lock if it is free and runs fn until ctx ends or the
// lock's connection fails.
func (s *Store) leadOnce(ctx context.Context, key int64, retry time.Duration, fn func(context.Context)) {
	c, err := s.w.Conn(ctx)
	if err != nil {
		return
	}
	defer c.Close()
	var got bool
	if err := c.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&got); err != nil || !got {
		return
	}
	defer c.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1)`, key)
	leading, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(leading)
	}()
	for {
		select {
		case <-done:
			stop()
			return
		case <-time.After(retry):
			if err := c.PingContext(ctx); err != nil {
				stop()
				<-done
				return
			}
		}
	}
}

// Hold keeps owner, a serve process's operation owner ID (sbx.Sandbox's
// OpOwner), live until ctx ends: on PostgreSQL a session advisory lock on
// a connection of its own, taken again should that connection fail, and
// dropped by PostgreSQL when the process dies. It returns once the owner
// is first held, or ctx ends.
func (s *Store) Hold(ctx context.Context, owner string) {
	s.held.Store(owner)
	if !s.pg {
		return
	}
	first := make(chan struct{})
	var once sync.Once
	go s.Lead(ctx, ownerKey(owner), 2*time.Second, func(ctx context.Context) {
		once.Do(func() { close(first) })
		<-ctx.Done()
	})
	select {
	case <-first:
	case <-ctx.Done():
	}
}

// Holds reports whether a live process holds owner. A SQLite ledger
// belongs to one process: only the owner it holds is live.
func (s *Store) Holds(ctx context.Context, owner string) (bool, error) {
	if owner == "" {
		return false, nil
	}
	if held, _ := s.held.Load().(string); held == owner {
		return true, nil
	}
	if !s.pg {
		return false, nil
	}
	c, err := s.w.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer c.Close()
	var free bool
	key := ownerKey(owner)
	if err := c.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&free); err != nil {
		return false, err
	}
	if free {
		_, err = c.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, key)
	}
	return !free, err
}

// ownerKey is the advisory lock of an operation owner ID.
func ownerKey(owner string) int64 {
	h := fnv.New64a()
	h.Write([]byte("sbx operation owner " + owner))
	return int64(h.Sum64())
}

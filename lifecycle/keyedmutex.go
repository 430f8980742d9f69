package lifecycle

import (
	"context"
	"sync"
)

// keyedMutex is one mutex per key, created on demand and freed when unused.
type keyedMutex struct {
	mu    sync.Mutex
	slots map[string]*slot
}

type slot struct {
	ch   chan struct{} // holds one token while locked
	refs int
}

// Lock takes the lock for key or returns ctx's error.
func (k *keyedMutex) Lock(ctx context.Context, key string) error {
	k.mu.Lock()
	if k.slots == nil {
		k.slots = map[string]*slot{}
	}
	s := k.slots[key]
	if s == nil {
		s = &slot{ch: make(chan struct{}, 1)}
		k.slots[key] = s
	}
	s.refs++
	k.mu.Unlock()
	select {
	case s.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		k.release(key, s)
		return ctx.Err()
	}
}

// Unlock releases the lock for key.
func (k *keyedMutex) Unlock(key string) {
	k.mu.Lock()
	s := k.slots[key]
	k.mu.Unlock()
	<-s.ch
	k.release(key, s)
}

func (k *keyedMutex) release(key string, s *slot) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s.refs--; s.refs == 0 {
		delete(k.slots, key)
	}
}

// Package keyed is a lock per key: one sandbox's operations, one runtime's,
// take turns while other keys' run at once.
package keyed

import (
	"context"
	"sync"
)

// Mutex is one mutex per key, made when a key is first locked and freed once
// no one holds it or waits for it, so that a key's lock is the same for every
// caller for as long as any of them needs it. The zero Mutex is ready.
type Mutex struct {
	mu    sync.Mutex
	slots map[string]*slot
}

// slot is one key's lock.
type slot struct {
	ch   chan struct{} // holds one token while the key is locked
	refs int           // holders and waiters: the slot goes at zero
}

// Lock takes the lock for key, waiting for it at most until ctx ends, when
// it returns ctx's error and holds nothing. A free lock is taken whatever
// ctx.
func (k *Mutex) Lock(ctx context.Context, key string) error {
	s := k.acquire(key)
	select {
	case s.ch <- struct{}{}:
		return nil
	default:
	}
	select {
	case s.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		k.release(key, s)
		return ctx.Err()
	}
}

// TryLock takes the lock for key if no one holds it, and reports whether it
// did.
func (k *Mutex) TryLock(key string) bool {
	s := k.acquire(key)
	select {
	case s.ch <- struct{}{}:
		return true
	default:
		k.release(key, s)
		return false
	}
}

// Unlock releases the lock for key, which the caller holds.
func (k *Mutex) Unlock(key string) {
	k.mu.Lock()
	s := k.slots[key]
	k.mu.Unlock()
	if s == nil {
		panic("keyed: unlock of unlocked key " + key)
	}
	select {
	case <-s.ch:
	default:
		panic("keyed: unlock of unlocked key " + key)
	}
	k.release(key, s)
}

// acquire returns key's slot, counting the caller in.
func (k *Mutex) acquire(key string) *slot {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.slots == nil {
		k.slots = map[string]*slot{}
	}
	s := k.slots[key]
	if s == nil {
		s = &slot{ch: make(chan struct{}, 1)}
		k.slots[key] = s
	}
	s.refs++
	return s
}

// release counts the caller out of key's slot, freeing it when no one is left.
func (k *Mutex) release(key string, s *slot) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s.refs--; s.refs == 0 {
		delete(k.slots, key)
	}
}

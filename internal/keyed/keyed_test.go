package keyed

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// slotCount is how many keys have a slot: held or waited for.
func (k *Mutex) slotCount() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.slots)
}

// refs is how many callers hold or wait for key.
func (k *Mutex) refs(key string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s := k.slots[key]; s != nil {
		return s.refs
	}
	return 0
}

func lockWithin(k *Mutex, key string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return k.Lock(ctx, key)
}

func TestKeysAreIndependent(t *testing.T) {
	var k Mutex
	if err := k.Lock(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	if err := lockWithin(&k, "b", time.Second); err != nil {
		t.Fatalf("another key waited for a held one: %v", err)
	}
	if !k.TryLock("c") {
		t.Fatal("TryLock of a free key failed")
	}
	if k.TryLock("a") {
		t.Fatal("TryLock of a held key succeeded")
	}
	k.Unlock("a")
	k.Unlock("b")
	k.Unlock("c")
	if n := k.slotCount(); n != 0 {
		t.Fatalf("%d slots left after every key was unlocked", n)
	}
}

// A waiter whose context ends gives up, holds nothing and leaves no slot;
// the holder is untouched.
func TestLockGivesUpWithItsContext(t *testing.T) {
	var k Mutex
	k.Lock(t.Context(), "a")
	if err := lockWithin(&k, "a", 20*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock of a held key: %v, want the context's deadline", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := k.Lock(ctx, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock of a held key with an ended context: %v", err)
	}
	if k.TryLock("a") {
		t.Fatal("the key is free after waiters gave up")
	}
	k.Unlock("a")
	if n := k.slotCount(); n != 0 {
		t.Fatalf("%d slots left", n)
	}
	if err := k.Lock(ctx, "a"); err != nil {
		t.Fatalf("a free key with an ended context: %v", err)
	}
	k.Unlock("a")
}

// The lock is the same for every caller while anyone holds or waits for it:
// when its holder unlocks (the local provider's Kill, which used to delete
// its per-ID mutex then) while another waits, the waiter holds it and a
// newcomer waits for the waiter, rather than getting a fresh lock of its own.
func TestUnlockWhileOthersWaitKeepsOneLock(t *testing.T) {
	var k Mutex
	k.Lock(t.Context(), "a")
	took := make(chan struct{})
	release := make(chan struct{})
	go func() {
		if err := k.Lock(context.Background(), "a"); err != nil {
			t.Error(err)
		}
		close(took)
		<-release
		k.Unlock("a")
	}()
	for k.refs("a") < 2 {
		time.Sleep(time.Millisecond) // until the waiter waits
	}
	k.Unlock("a")
	<-took
	if k.TryLock("a") {
		t.Fatal("a newcomer took the key its waiter holds")
	}
	if err := lockWithin(&k, "a", 20*time.Millisecond); err == nil {
		t.Fatal("a newcomer locked the key its waiter holds")
	}
	close(release)
	if err := lockWithin(&k, "a", time.Second); err != nil {
		t.Fatalf("the key once its holder let go: %v", err)
	}
	k.Unlock("a")
	if n := k.slotCount(); n != 0 {
		t.Fatalf("%d slots left", n)
	}
}

func TestMutualExclusion(t *testing.T) {
	var k Mutex
	var wg sync.WaitGroup
	keys := []string{"a", "b", "c"}
	counts := make([]int, len(keys))
	for i := range 64 {
		key, count := keys[i%3], &counts[i%3]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if err := k.Lock(context.Background(), key); err != nil {
					t.Error(err)
					return
				}
				n := *count // the race detector sees two holders of one key
				*count = n + 1
				k.Unlock(key)
			}
		}()
	}
	wg.Wait()
	if counts[0]+counts[1]+counts[2] != 6400 {
		t.Fatalf("counts %v", counts)
	}
	if n := k.slotCount(); n != 0 {
		t.Fatalf("%d slots left", n)
	}
}

func TestUnlockOfAFreeKeyPanics(t *testing.T) {
	var k Mutex
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	k.Unlock("a")
}

package sbx

import "time"

// Clock tells the time and waits; tests pass a fake so they never sleep.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed.
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns the current UTC time truncated to microseconds, the ledger's precision.
func (SystemClock) Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// After waits on the real clock.
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

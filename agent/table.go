package agent

import (
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"sync"
)

// How long ended commands stay findable, for clients that reconnect: the
// latest maxEnded of them, and the output of the newest of those up to
// endedOutputBudget bytes in all.
const (
	maxEnded          = 64
	endedOutputBudget = 32 << 20
)

// table is the agent's commands and PTYs: the running ones, by PID and by
// tag, and the recently ended ones.
type table struct {
	mu     sync.Mutex
	byPID  map[int]*command
	tags   map[string]*command // running commands' tags; nil while a start is underway
	ended  []*command          // oldest first
	closed bool
}

func newTable() *table {
	return &table{byPID: map[int]*command{}, tags: map[string]*command{}}
}

// tagPattern is what a tag may look like; "." and ".." match it but are
// refused, since a client's or proxy's path cleaning makes
// /commands/.. into / (DELETE /commands/.. would reach DELETE /).
var tagPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// checkTag refuses a tag that is not a name to find a command by; the
// empty tag is no tag.
func checkTag(tag string) error {
	switch {
	case tag == "":
		return nil
	case tag == "." || tag == "..":
		return invalidField("tag", "tag %q is a path segment, not a name", tag)
	case !tagPattern.MatchString(tag):
		return invalidField("tag", "tag %s must be 1 to 64 letters, digits, '.', '_' or '-'", quote(tag))
	}
	return nil
}

// reserve claims tag for a command about to start; release it with
// unreserve if the start fails. The empty tag needs no claim.
func (t *table) reserve(tag string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return apiError(http.StatusServiceUnavailable, "the agent is shutting down")
	}
	if tag == "" {
		return nil
	}
	if _, taken := t.tags[tag]; taken {
		return conflict("tag %s is taken by a running command", quote(tag))
	}
	t.tags[tag] = nil
	return nil
}

func (t *table) unreserve(tag string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tag != "" && t.tags[tag] == nil {
		delete(t.tags, tag)
	}
}

// add registers a started command under the tag it reserved. It fails when
// the agent closed meanwhile.
func (t *table) add(c *command) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c.tag != "" {
		t.tags[c.tag] = c
	}
	t.byPID[c.pid] = c // a PID reused after an ended command's: the new one wins
	if t.closed {
		return apiError(http.StatusServiceUnavailable, "the agent is shutting down")
	}
	return nil
}

// retire moves an ended command to the ended list, freeing its tag, and
// forgets or empties what the retention limits no longer cover.
func (t *table) retire(c *command) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c.tag != "" && t.tags[c.tag] == c {
		delete(t.tags, c.tag)
	}
	t.ended = append(t.ended, c)
	if len(t.ended) > maxEnded {
		old := t.ended[0]
		t.ended = t.ended[1:]
		if t.byPID[old.pid] == old {
			delete(t.byPID, old.pid)
		}
	}
	kept := 0
	for _, e := range slices.Backward(t.ended) {
		if kept += e.out.held(); kept > endedOutputBudget {
			e.out.release()
		}
	}
}

// find answers the command ref names: a PID, else the running command with
// that tag, else the latest ended one.
func (t *table) find(ref string) (*command, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if pid, err := strconv.Atoi(ref); err == nil {
		if c := t.byPID[pid]; c != nil {
			return c, nil
		}
	}
	if c := t.tags[ref]; c != nil {
		return c, nil
	}
	for _, c := range slices.Backward(t.ended) {
		if c.tag == ref && t.byPID[c.pid] == c {
			return c, nil
		}
	}
	return nil, notFound("no command %s", quote(ref))
}

// all answers every command known, running or ended, oldest first.
func (t *table) all() []*command {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*command, 0, len(t.byPID))
	for _, c := range t.byPID {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *command) int {
		if c := a.info.StartedAt.Compare(b.info.StartedAt); c != 0 {
			return c
		}
		return a.pid - b.pid
	})
	return out
}

// close refuses new commands and answers every command known.
func (t *table) close() []*command {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	return t.all()
}

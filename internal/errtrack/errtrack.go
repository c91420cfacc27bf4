// Package errtrack decides what a receiver logs about failures and facts, so that each is said
// once: a counter that cannot be read usually fails the same way on every scrape, and the operator
// needs to read about it when it starts, changes or ends, not every ten seconds. Receivers use
// Log; tracker is the failure bookkeeping under it.
package errtrack // import "github.com/otelcol-iclens/otelcol-iclens/internal/errtrack"

// tracker remembers which keys (usually file paths or series names) are failing and with what.
// It is not safe for concurrent use.
type tracker struct {
	failing map[string]string
}

// newTracker returns an empty tracker.
func newTracker() *tracker { return &tracker{failing: map[string]string{}} }

// Fail records that key failed with err and reports whether this is news: the key was not failing
// before, or failed with another message.
func (t *tracker) Fail(key string, err error) bool {
	msg := err.Error()
	if prev, ok := t.failing[key]; ok && prev == msg {
		return false
	}
	t.failing[key] = msg
	return true
}

// Recover records that key works and reports whether it was failing until now.
func (t *tracker) Recover(key string) bool {
	if _, ok := t.failing[key]; !ok {
		return false
	}
	delete(t.failing, key)
	return true
}

// Failing returns the number of keys currently failing.
func (t *tracker) Failing() int { return len(t.failing) }

// Forget drops every key for which keep returns false (for example the files of a device that is
// gone), so that the tracker does not grow without bound.
func (t *tracker) Forget(keep func(key string) bool) {
	for k := range t.failing {
		if !keep(k) {
			delete(t.failing, k)
		}
	}
}

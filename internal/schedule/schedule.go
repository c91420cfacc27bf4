// Package schedule says when a receiver discovers its devices again. Every receiver rediscovers
// on a period (devices come and go: a hot-plugged NIC, a GPU back from reset) and on request (a
// read found a device gone), and all three do it through this one type, with the clock passed in.
package schedule // import "github.com/otelcol-iclens/otelcol-iclens/internal/schedule"

import "time"

// Schedule is due when it never ran, when its period has passed since it last ran, or when a run
// was requested. It is not safe for concurrent use.
type Schedule struct {
	period    time.Duration
	last      time.Time
	requested bool
	ran       bool
}

// New returns a schedule with the given period; 0 means only on request (and the first time).
func New(period time.Duration) *Schedule { return &Schedule{period: period} }

// Due reports whether a run is due at now.
func (s *Schedule) Due(now time.Time) bool {
	switch {
	case !s.ran, s.requested:
		return true
	case s.period <= 0:
		return false
	}
	return !now.Before(s.last.Add(s.period))
}

// Request makes the next Due true (a read found a device gone).
func (s *Schedule) Request() { s.requested = true }

// Done records that a run happened at now.
func (s *Schedule) Done(now time.Time) {
	s.last, s.ran, s.requested = now, true, false
}

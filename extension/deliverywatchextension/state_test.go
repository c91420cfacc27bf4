package deliverywatchextension

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// steps feeds the queue sizes to one exporter's state, 10 s apart, and returns the transitions.
func steps(backlogs []float64, failed []float64) []transition {
	s := &exporterState{}
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var out []transition
	for i, b := range backlogs {
		r := reading{backlog: b, hasQueue: true}
		if failed != nil {
			r.failed = failed[i]
		}
		out = append(out, s.step(r, t0.Add(time.Duration(i)*10*time.Second), 3))
	}
	return out
}

const (
	u  = unchanged
	f  = startedFailing
	rf = startedRefusing
	r  = recovered
)

func TestHealthyQueueRisesAndFalls(t *testing.T) {
	// A queue that fills between sends and empties at each send is not an outage.
	assert.Equal(t, []transition{u, u, u, u, u, u, u, u}, steps([]float64{0, 3, 0, 5, 6, 0, 2, 0}, nil))
}

func TestOTLPQueueOutage(t *testing.T) {
	// The sending_queue grows while the backend is away, drains when it is back.
	got := steps([]float64{0, 100, 200, 300, 400, 500, 0, 0, 0, 0, 0}, nil)
	assert.Equal(t, []transition{u, u, u, f, u, u, u, u, r, u, u}, got)
}

// TestWALOutage: the remote-write exporter's write-ahead log lag (entries written minus read)
// falls to near zero each time its reader reads the log again after a failed batch
// (prometheusremotewriteexporter v0.165.1 wal.go: retrieveWALIndices resets the read index, the
// reader reads up to buffer_size entries), then grows again while the batch is retried. That fall
// is not a recovery: only a queue that stays drained for growing_checks checks is.
func TestWALOutage(t *testing.T) {
	lag := []float64{2, 1, 2, 30, 60, 90, 1, 30, 60, 90, 2, 1, 2, 2}
	got := steps(lag, nil)
	assert.Equal(t, []transition{u, u, u, u, f, u, u, u, u, u, u, u, r, u}, got)
}

func TestDroppedPointsAreAFailure(t *testing.T) {
	// No queue growth, but points dropped after the retries: failing at once, and recovered
	// once no more are dropped for growing_checks checks.
	got := steps([]float64{0, 0, 0, 0, 0, 0, 0}, []float64{0, 0, 5, 5, 5, 5, 5})
	assert.Equal(t, []transition{u, u, f, u, u, r, u}, got)
}

func TestCounterStartsOver(t *testing.T) {
	// A restarted collector behind the endpoint starts its counters at 0: not a drop (after the
	// 9 points dropped, which are).
	assert.Equal(t, []transition{u, f, u, u}, steps([]float64{0, 0, 0, 0}, []float64{0, 9, 0, 0}))
}

func TestDropsBeforeTheFirstCheck(t *testing.T) {
	// The process's own counters: what it dropped before the watcher's first check counts.
	assert.Equal(t, []transition{f, u, u, r}, steps([]float64{0, 0, 0, 0}, []float64{9, 9, 9, 9}))
}

// TestRefusedPointsAreAFailure: the queue refused points (its disk is full) while its size
// stays flat: failing at once, recovered once it refuses none for growing_checks checks.
func TestRefusedPointsAreAFailure(t *testing.T) {
	s := &exporterState{}
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var got []transition
	for i, n := range []float64{0, 0, 4000, 9000, 9000, 9000, 9000} {
		got = append(got, s.step(reading{backlog: 12, hasQueue: true, refused: n}, t0.Add(time.Duration(i)*10*time.Second), 3))
	}
	assert.Equal(t, []transition{u, u, f, u, u, u, r}, got)
	assert.Equal(t, 9000.0, s.RefusedIn)
}

// TestRefusalsDuringAnOutage: the queue grows (the backend is away), then its disk fills and it
// refuses points: the refusals are said once, when they start, and counted into the outage.
func TestRefusalsDuringAnOutage(t *testing.T) {
	s := &exporterState{}
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	backlog := []float64{0, 100, 200, 300, 400, 400, 400, 0, 0, 0}
	refused := []float64{0, 0, 0, 0, 0, 500, 900, 900, 900, 900}
	var got []transition
	for i := range backlog {
		got = append(got, s.step(reading{backlog: backlog[i], hasQueue: true, refused: refused[i]}, t0.Add(time.Duration(i)*10*time.Second), 3))
	}
	assert.Equal(t, []transition{u, u, u, f, u, rf, u, u, u, r}, got)
	assert.Equal(t, 900.0, s.RefusedIn)
}

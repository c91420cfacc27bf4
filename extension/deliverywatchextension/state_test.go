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
	u = unchanged
	f = startedFailing
	r = recovered
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
	// A restarted collector behind the endpoint starts its counters at 0: not a drop.
	assert.Equal(t, []transition{u, u, u}, steps([]float64{0, 0, 0}, []float64{9, 0, 0}))
}

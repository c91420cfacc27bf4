package nodestate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCounterResetIsARate: a counter that goes back (driver reload) is read as restarted from
// zero, as PromQL's irate does (prometheus/promql/functions.go, instantValue).
func TestCounterResetIsARate(t *testing.T) {
	s := &series{}
	s.add(1e9, 1000)
	s.add(2e9, 300)
	r, ok := s.rate(2e9, 3*time.Second)
	require.True(t, ok)
	assert.Equal(t, 300.0, r)
	s.add(3e9, 1300)
	r, _ = s.rate(3e9, 3*time.Second)
	assert.Equal(t, 1000.0, r)
	_, ok = s.rate(6e9, 3*time.Second)
	assert.False(t, ok, "samples older than the window give no rate")
}

// TestValueIsTheNewestAtOrBeforeNow: an instant read at now sees the newest sample stamped at or
// before now, as PromQL's instant selector does (prometheus/promql/engine.go, vectorSelectorSingle),
// so a point stamped a moment after the evaluation began does not make the series vanish for it.
func TestValueIsTheNewestAtOrBeforeNow(t *testing.T) {
	s := &series{}
	_, ok := s.value(1e9, time.Minute)
	assert.False(t, ok, "no sample")
	s.add(1e9, 1)
	s.add(2e9, 2)
	v, ok := s.value(1.5e9, time.Minute)
	require.True(t, ok, "the sample at 2 s is after now: the one at 1 s is read")
	assert.Equal(t, 1.0, v)
	v, _ = s.value(2e9, time.Minute)
	assert.Equal(t, 2.0, v)
	_, ok = s.value(0.5e9, time.Minute)
	assert.False(t, ok, "both after now")
	_, ok = s.value(62e9, time.Minute)
	assert.False(t, ok, "older than the lookback")
}

// TestRateReadsTheTwoNewestAtOrBeforeNow: a point stamped a moment after the evaluation's time,
// ingested before that evaluation ran (the evaluation waited for the CPU while the receiver's
// scrape went through), leaves the rate of the two samples before it, as PromQL's irate at that
// time reads it (prometheus/promql/functions.go, instantValue over the samples in the range),
// instead of no rate at all: the latter made the connector decide nothing at such evaluations and
// restart its hold (TestDiagnosisInPrometheus under load).
func TestRateReadsTheTwoNewestAtOrBeforeNow(t *testing.T) {
	s := &series{}
	s.add(1e9, 100)
	s.add(2e9, 300)
	s.add(3.01e9, 1300) // stamped 10 ms after the evaluation at 3 s
	r, ok := s.rate(3e9, 3*time.Second)
	require.True(t, ok, "the samples at 1 s and 2 s are at or before now")
	assert.Equal(t, 200.0, r)
	r, ok = s.rate(3.5e9, 3*time.Second)
	require.True(t, ok)
	assert.InDelta(t, 1000/1.01, r, 1e-9, "at 3.5 s the newest two are read")
	_, ok = s.rate(1.5e9, 3*time.Second)
	assert.False(t, ok, "one sample at or before now is no rate")
	s.add(4e9, 1400)
	_, ok = s.rate(1.5e9, 3*time.Second)
	assert.False(t, ok, "the sample at 1 s is no longer kept")
}

// TestBothDirectionsCountInTheTotalOnly: a link served as one figure for its two directions
// (direction=both, an AMD GPU's PCIe) counts towards its component's total and towards no single
// direction, so that a share of one direction (the diagnosis's GPU transmit share) is not made up.
func TestBothDirectionsCountInTheTotalOnly(t *testing.T) {
	n := New("node1", Limits{})
	for _, sec := range []int64{1, 2} {
		b := newBatch(sec)
		b.counter(GPUPCIe, "both", "gpu0", "0000:05:00.0", 24e9*sec)
		b.counter(GPUPCIe, Transmit, "gpu1", "0000:15:00.0", 1e9*sec)
		b.ingest(n)
	}
	st := n.At(2e9, 30*time.Second, 5*time.Minute)
	assert.Equal(t, 25e9, st.IO(GPUPCIe))
	assert.Equal(t, 1e9, st.IODirection(GPUPCIe, Transmit))
	assert.Equal(t, 0.0, st.IODirection(GPUPCIe, Receive))
}

package lensviewexporter

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func points(r *ring, after int64) (ts []int64, vs []float64) {
	r.since(after, func(t int64, v float64) {
		ts = append(ts, t)
		vs = append(vs, v)
	})
	return ts, vs
}

func TestRingWrapsAndKeepsTheNewest(t *testing.T) {
	r := newRing(3)
	for i := int64(1); i <= 5; i++ {
		r.push(i*1000, float64(i))
	}
	ts, vs := points(r, 0)
	assert.Equal(t, []int64{3000, 4000, 5000}, ts)
	assert.Equal(t, []float64{3, 4, 5}, vs)
	assert.Equal(t, 3, r.len())
	lt, lv, ok := r.last()
	assert.True(t, ok)
	assert.Equal(t, int64(5000), lt)
	assert.Equal(t, 5.0, lv)
	ts, _ = points(r, 3500)
	assert.Equal(t, []int64{4000, 5000}, ts)
}

func TestRingSumsOneInstantAndDropsThePast(t *testing.T) {
	r := newRing(4)
	r.push(1000, 1)
	r.push(1000, 2) // a second IIO stack of the same scrape
	r.push(500, 9)  // older than the newest: dropped
	_, vs := points(r, 0)
	assert.Equal(t, []float64{3}, vs)

	g := newRing(4)
	g.set(1000, 1)
	g.set(1000, 2) // a gauge at the same instant replaces
	_, vs = points(g, 0)
	assert.Equal(t, []float64{2}, vs)
}

func TestRingEmpty(t *testing.T) {
	r := newRing(2)
	_, _, ok := r.last()
	assert.False(t, ok)
	ts, _ := points(r, 0)
	assert.Empty(t, ts)
}

func TestRingNeverHoldsMoreThanItsBound(t *testing.T) {
	r := newRing(1000)
	for i := range int64(5000) {
		r.push(i, 1)
		assert.LessOrEqual(t, cap(r.t), 1000)
		assert.LessOrEqual(t, cap(r.v), 1000)
	}
	assert.Equal(t, 1000, r.len())
}

// TestRecentAveragesTheNewestIntervals: the port table's "now" is the time-weighted mean of the
// newest intervals, so that one late scrape (67 B/s over 1.5 s, then 200 B/s over 0.5 s, of a
// port moving 100 B a second) shows as the 100 B/s the port moved, not as 200 B/s.
func TestRecentAveragesTheNewestIntervals(t *testing.T) {
	r := newRing(16)
	prev := int64(0)
	for _, at := range []int64{1000, 2000, 3000, 4500, 5000} {
		r.push(at, 100/(float64(at-prev)/1000))
		prev = at
	}
	at, v, ok := r.recent(3)
	require.True(t, ok)
	assert.Equal(t, int64(5000), at)
	assert.InDelta(t, 100, v, 1e-9)
	_, last, _ := r.last()
	assert.InDelta(t, 200, last, 1e-9, "the newest interval alone")
	_, all, _ := r.recent(100)
	assert.InDelta(t, 100, all, 1e-9, "fewer points than k: all of them")
	_, _, ok = newRing(4).recent(3)
	assert.False(t, ok)
}

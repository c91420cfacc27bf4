package lensviewexporter

import (
	"testing"

	"github.com/stretchr/testify/assert"
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

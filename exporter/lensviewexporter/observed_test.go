package lensviewexporter

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestMeanWeighsRatesByTheirInterval: a replay moves one recorded sample (here 100 B) a scrape; a
// scrape that a loaded machine delays by half an interval draws 67 B/s over 1.5 s and the next
// 200 B/s over 0.5 s. The mean is the bytes over the time they took (100 B/s), as a port that
// moved 100 B/s on average did; a plain average of the rates would say 113 B/s.
func TestMeanWeighsRatesByTheirInterval(t *testing.T) {
	r := newRing(16)
	ms := []int64{1000, 2000, 3500, 4000, 5000}
	prev := int64(0)
	for _, t := range ms {
		r.push(t, 100/(float64(t-prev)/1000))
		prev = t
	}
	assert.InDelta(t, 100, mean(r, 0), 1e-9)
	assert.InDelta(t, 100, mean(r, 1500), 1e-9, "after a point: the window's own points only")

	one := newRing(4)
	one.push(1000, 42)
	assert.Equal(t, 42.0, mean(one, 0), "a single point is its own mean")
	assert.Equal(t, 0.0, mean(newRing(4), 0), "no points")
}

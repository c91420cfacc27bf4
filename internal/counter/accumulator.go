package counter

import "math"

// Accumulator sums a non-negative real quantity (bytes integrated from a rate, counts times a
// fractional bytes-per-count) into whole units, carrying the fraction from one addition to the
// next so that nothing is lost to rounding however small each addition is.
type Accumulator struct {
	whole uint64
	frac  float64
}

// Total returns the whole units summed so far.
func (a *Accumulator) Total() uint64 { return a.whole }

// Add adds v (v >= 0; a negative or NaN v is ignored).
func (a *Accumulator) Add(v float64) {
	if !(v >= 0) {
		return
	}
	f := v + a.frac
	w := math.Floor(f)
	a.whole += uint64(w)
	a.frac = f - w
}

// AddCounts adds counts × perCount. A whole perCount (64 bytes a cache line, 32 a PCIe word) is
// multiplied exactly in integers: float64 loses precision above 2^53.
func (a *Accumulator) AddCounts(counts uint64, perCount float64) {
	if perCount == math.Trunc(perCount) && perCount >= 0 && perCount < 1<<20 {
		a.whole += counts * uint64(perCount)
		return
	}
	a.Add(float64(counts) * perCount)
}

// Package burst folds the fast samples of a cumulative byte counter, taken many times per
// collection interval, into what a collection interval can carry: the peak rate over one
// sampling window, the time spent above shares of the line rate, and a histogram of the
// windows' utilization. It knows nothing of where the samples come from (an RDMA port's PMA data
// counters, a netdev's statistics, an uncore counter group): a receiver hands it (timestamp,
// counter) pairs and the line rate, live from its fast sampler or from a recording's sub-interval
// samples, so that a replay folds exactly what was recorded, whatever the machine's speed.
package burst // import "github.com/otelcol-iclens/otelcol-iclens/internal/burst"

import (
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/internal/histogram"
)

// Bounds are the explicit bounds of the utilization histogram, as shares of the line rate. OTel
// explicit-bucket semantics: bucket i counts windows with bounds[i-1] < u <= bounds[i], the last
// one everything above 1 (a counter that ran ahead of the window, or a line rate too low).
var Bounds = []float64{0.1, 0.25, 0.5, 0.75, 0.9, 1}

// Sample is one reading of a cumulative counter, in bytes, and when it was taken.
type Sample struct {
	T     time.Time
	Bytes uint64
}

// Interval is what the windows that ended in one collection interval add up to.
type Interval struct {
	// Windows is how many sampling windows ended in the interval.
	Windows int
	// Peak is the highest rate of those windows, bytes/s, measured over PeakWindow.
	Peak       float64
	PeakWindow time.Duration
}

// Fold folds one counter's samples. The zero value is not ready: use New.
type Fold struct {
	lineRate float64
	shares   []float64

	prev Sample
	have bool

	iv Interval

	// Since start (cumulative: they survive counter resets, which only lose one window).
	start time.Time
	above []time.Duration
	hist  histogram.Explicit // utilization of every window, over Bounds
}

// New returns a fold for a counter whose line rate is lineRate bytes/s (0: unknown, which leaves
// out the time above shares and the histogram) and the shares of it whose time above is counted.
func New(lineRate float64, shares []float64) *Fold {
	return &Fold{lineRate: lineRate, shares: shares, above: make([]time.Duration, len(shares)),
		hist: histogram.Explicit{Counts: make([]uint64, len(Bounds)+1)}}
}

// SetLineRate changes the line rate (a link retrained); the windows from then on are measured
// against it.
func (f *Fold) SetLineRate(lineRate float64) { f.lineRate = lineRate }

// LineRate is the line rate the windows are measured against, bytes/s.
func (f *Fold) LineRate() float64 { return f.lineRate }

// Add folds one sample. A sample not later than the previous one is ignored (a recording's clock
// stepped back); one lower than the previous one is a counter reset, which loses the window that
// ends in it and starts over from it.
func (f *Fold) Add(s Sample) {
	if !f.have {
		f.prev, f.have = s, true
		if f.start.IsZero() {
			f.start = s.T
		}
		return
	}
	w := s.T.Sub(f.prev.T)
	if w <= 0 {
		return
	}
	if s.Bytes < f.prev.Bytes {
		f.prev = s
		return
	}
	rate := float64(s.Bytes-f.prev.Bytes) / w.Seconds()
	f.prev = s
	f.iv.Windows++
	if f.iv.Windows == 1 || rate > f.iv.Peak {
		f.iv.Peak, f.iv.PeakWindow = rate, w
	}
	if f.lineRate <= 0 {
		return
	}
	u := rate / f.lineRate
	for i, sh := range f.shares {
		if u >= sh {
			f.above[i] += w
		}
	}
	f.hist.Observe(Bounds, u)
}

// Take returns the windows since the previous Take and starts a new interval. The last sample is
// kept, so the window that spans two intervals counts in the one where it ends.
func (f *Fold) Take() Interval {
	iv := f.iv
	f.iv = Interval{}
	return iv
}

// Start is the time of the first sample: the start of the cumulative series.
func (f *Fold) Start() time.Time { return f.start }

// Above is, per share, the time the counter ran at or above that share of the line rate since
// Start: the sum of the windows whose rate was.
func (f *Fold) Above() []time.Duration { return f.above }

// Histogram returns a copy of the utilization histogram since Start: a count per bucket of
// Bounds (one more than Bounds), the number of windows, the sum of their utilizations and the
// lowest and highest (0 before the first measured window).
func (f *Fold) Histogram() histogram.Explicit { return f.hist.Copy() }

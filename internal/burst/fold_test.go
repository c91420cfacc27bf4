package burst

import (
	"math"
	"testing"
	"time"
)

// lineRate is a 100 Gb/s port in bytes/s.
const lineRate = 100e9 / 8

var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// stepBytes is the counter of a port that moves line-rate bursts of length burst every period (the
// step shape of a data-parallel training loop: the gradient exchange at line rate, then compute),
// at elapsed time e.
func stepBytes(e, burst, period time.Duration) uint64 {
	full := e / period
	in := min(e%period, burst)
	return uint64(lineRate * (time.Duration(full)*burst + in).Seconds())
}

func TestStepShapeAligned(t *testing.T) {
	f := New(lineRate, []float64{0.5, 0.9})
	// 600 ms of 40 ms bursts, sampled every 10 ms from t0: windows align with the bursts.
	for e := time.Duration(0); e <= 1200*time.Millisecond; e += 10 * time.Millisecond {
		f.Add(Sample{T: t0.Add(e), Bytes: stepBytes(e, 40*time.Millisecond, 600*time.Millisecond)})
	}
	iv := f.Take()
	if iv.Windows != 120 {
		t.Fatalf("windows = %d, want 120", iv.Windows)
	}
	if math.Abs(iv.Peak-lineRate)/lineRate > 1e-6 || iv.PeakWindow != 10*time.Millisecond {
		t.Errorf("peak = %v over %v, want %v over 10ms", iv.Peak, iv.PeakWindow, lineRate)
	}
	// Two bursts of 40 ms.
	for i, a := range f.Above() {
		if a != 80*time.Millisecond {
			t.Errorf("above share %d = %v, want 80ms", i, a)
		}
	}
	h := f.Histogram()
	// 8 windows at line rate (bucket (0.9, 1]), 112 idle ones (bucket <= 0.1).
	if h.Count != 120 || h.Counts[0] != 112 || h.Counts[5] != 8 || h.Max < 0.999999 || h.Min != 0 {
		t.Errorf("histogram = %+v", h)
	}
	if again := f.Take(); again.Windows != 0 {
		t.Errorf("second Take = %+v, want an empty interval", again)
	}
}

func TestStepShapeOffset(t *testing.T) {
	f := New(lineRate, []float64{0.5, 0.9})
	// The sampler ticks 3 ms after each burst starts: each 40 ms burst spans three full windows
	// and two partial ones (7 ms = 70 % and 3 ms = 30 % of a window at line rate).
	for e := 3 * time.Millisecond; e <= 1203*time.Millisecond; e += 10 * time.Millisecond {
		f.Add(Sample{T: t0.Add(e), Bytes: stepBytes(e, 40*time.Millisecond, 600*time.Millisecond)})
	}
	iv := f.Take()
	if math.Abs(iv.Peak-lineRate)/lineRate > 1e-6 {
		t.Errorf("peak = %v, want %v", iv.Peak, lineRate)
	}
	above := f.Above()
	// >= 50 %: the three full windows and the 70 % one, per burst; >= 90 %: the full ones.
	if above[0] != 80*time.Millisecond || above[1] != 60*time.Millisecond {
		t.Errorf("above = %v, want [80ms 60ms]", above)
	}
	h := f.Histogram()
	// per burst: 3 in (0.9,1], 1 in (0.5,0.75] (70 %), 1 in (0.25,0.5] (30 %).
	if h.Counts[5] != 6 || h.Counts[3] != 2 || h.Counts[2] != 2 {
		t.Errorf("histogram counts = %v", h.Counts)
	}
}

func TestResetLosesOneWindow(t *testing.T) {
	f := New(lineRate, []float64{0.9})
	f.Add(Sample{T: t0, Bytes: 1 << 40})
	f.Add(Sample{T: t0.Add(10 * time.Millisecond), Bytes: 1<<40 + uint64(lineRate/100)})
	f.Add(Sample{T: t0.Add(20 * time.Millisecond), Bytes: 5}) // perfquery -R, driver reload
	f.Add(Sample{T: t0.Add(30 * time.Millisecond), Bytes: 5 + uint64(lineRate/200)})
	f.Add(Sample{T: t0.Add(30 * time.Millisecond), Bytes: 1 << 50}) // same time: ignored
	iv := f.Take()
	if iv.Windows != 2 {
		t.Fatalf("windows = %d, want 2 (the one across the reset is lost)", iv.Windows)
	}
	if math.Abs(iv.Peak-lineRate)/lineRate > 1e-6 {
		t.Errorf("peak = %v, want the first window's %v, not the reset's", iv.Peak, lineRate)
	}
	if f.Above()[0] != 10*time.Millisecond || !f.Start().Equal(t0) {
		t.Errorf("above = %v, start = %v", f.Above(), f.Start())
	}
}

func TestUnknownLineRate(t *testing.T) {
	f := New(0, []float64{0.9})
	f.Add(Sample{T: t0, Bytes: 0})
	f.Add(Sample{T: t0.Add(20 * time.Millisecond), Bytes: 2000})
	iv := f.Take()
	if iv.Peak != 100000 || iv.PeakWindow != 20*time.Millisecond {
		t.Errorf("peak = %v over %v, want 100000 B/s over 20ms", iv.Peak, iv.PeakWindow)
	}
	if h := f.Histogram(); h.Count != 0 || f.Above()[0] != 0 {
		t.Errorf("without a line rate no share can be measured: %+v %v", h, f.Above())
	}
}

func TestWindowSpanningIntervalsCountsOnce(t *testing.T) {
	f := New(lineRate, nil)
	f.Add(Sample{T: t0, Bytes: 0})
	f.Add(Sample{T: t0.Add(10 * time.Millisecond), Bytes: 1000})
	if iv := f.Take(); iv.Windows != 1 {
		t.Fatalf("first interval: %+v", iv)
	}
	f.Add(Sample{T: t0.Add(20 * time.Millisecond), Bytes: 3000})
	if iv := f.Take(); iv.Windows != 1 || iv.Peak != 200000 {
		t.Errorf("second interval = %+v, want the window from the first interval's last sample", iv)
	}
}

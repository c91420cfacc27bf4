package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import (
	"math"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Skylake-SP IIO free-running counters are 36 bits wide (uncore_snbep.c skx_iio_freerunning):
// at 4 bytes a count they hold 256 GiB, which one PCIe 3.0 x16 port moves in about 17 s. Reading
// a perf event makes the kernel fold the hardware delta, modulo 2^36, into the event's 64-bit
// count (uncore.c uncore_perf_event_update), and the kernel's own hrtimer does so only every 60 s.
// So whenever collection_interval is longer than half the wrap window, a background reader reads
// those groups in between: no wrap is lost, and the scrape still reports what the kernel counted.

// foldEvery returns how often the wrapping groups must be read between scrapes, 0 when the
// scrapes themselves are frequent enough.
func (s *uncoreScraper) foldEvery() time.Duration {
	var every time.Duration
	for _, g := range s.plan.groups {
		if g.wrapWindow == 0 || s.cfg.CollectionInterval <= g.wrapWindow/2 {
			continue
		}
		if half := g.wrapWindow / 2; every == 0 || half < every {
			every = half
		}
	}
	return every
}

// fold reads the groups whose counters can wrap unseen. Errors are left to the next scrape, which
// reads the same group and reports them.
func (s *uncoreScraper) fold(now time.Time) {
	for _, g := range s.plan.groups {
		if g.wrapWindow == 0 || g.handle == nil {
			continue
		}
		if err := g.handle.Read(&g.reading); err == nil {
			g.lastRead = now
		}
	}
}

// ensureFolding starts the background reader when the plan needs one. Called with s.mu held.
func (s *uncoreScraper) ensureFolding() {
	every := s.foldEvery()
	if every == 0 || s.foldStop != nil {
		return
	}
	s.log.Once("fold", zapcore.InfoLevel, "collection_interval is longer than half the wrap time of the IIO free-running counters: "+
		"reading them in between so that no wrap is lost",
		zap.Duration("collection_interval", s.cfg.CollectionInterval), zap.String("platform", s.plat.name), zap.Duration("every", every.Round(time.Second)))
	stop := make(chan struct{})
	done := make(chan struct{})
	s.foldStop, s.foldDone = stop, done
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				s.mu.Lock()
				s.fold(s.now())
				s.mu.Unlock()
			}
		}
	}()
}

// stopFolding stops the background reader. Called without s.mu held.
func (s *uncoreScraper) stopFolding() {
	if s.foldStop == nil {
		return
	}
	close(s.foldStop)
	<-s.foldDone
	s.foldStop, s.foldDone = nil, nil
}

// pcie3x16 is the payload rate of a PCIe 3.0 x16 link: 8 GT/s x 16 lanes x 128/130 / 8.
const pcie3x16 = 8e9 * 16 * 128 / 130 / 8

// wrapWindow is how long a free-running counter of bits width takes to wrap when one port runs
// at PCIe 3.0 x16 line rate (the fastest link an SKX port has): 2^36 counts x 4 B = 256 GiB,
// about 17 s.
func wrapWindow(bits uint, bytesPerCount float64) time.Duration {
	if bits >= 64 || bytesPerCount <= 0 {
		return 0
	}
	secs := math.Ldexp(1, int(bits)) * bytesPerCount / pcie3x16
	if secs > 365*24*3600 {
		return 0
	}
	return time.Duration(secs * float64(time.Second))
}

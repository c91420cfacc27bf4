package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import "time"

// The slow counters (Config.SlowInterval, counterFile.slow) are read on the first scrape after a
// discovery and then once every slow_interval, with rnic.port.info, the device list and the
// tracker's sweep; README.md ("Slow counters") says why.

// slowCountersDue reports whether the scrape at now reads the slow counters.
func (s *rnicScraper) slowCountersDue(now time.Time) bool {
	iv := s.cfg.SlowInterval
	if iv <= 0 || s.slowAt.IsZero() {
		return true
	}
	// A scrape that comes up to half a collection interval early still counts: ticks jitter, and
	// waiting for the next one would stretch the slow period by a whole collection interval.
	return now.Sub(s.slowAt) >= iv-s.cfg.CollectionInterval/2
}

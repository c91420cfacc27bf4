package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import "time"

// The slow counters (Config.SlowInterval, counterFile.slow) are read on the first scrape after a
// discovery and then once every slow_interval; on the scrapes in between their files are not read
// (on mlx5 each read is a firmware command, DESIGN §4) and they have no point. Their last point
// keeps its own timestamp: a repeated value stamped with a later time would claim a freshness it
// does not have, and would cost every pipeline stage a point per series per scrape. The Prometheus
// exporter keeps serving the last value; rate() needs a window of two slow_intervals.
//
// rnic.port.info, whose attributes are the static facts resolved at discovery, follows the same
// cadence: it is recorded on the scrapes that read the slow counters, which include the first
// scrape after every discovery.
//
// The device list (/sys/class/infiniband) is read on those scrapes too, and on every scrape while
// the node has no RDMA port or after a read said that a device went away (ENOENT, or ENODEV on a
// file kept open): a device that appears is picked up within slow_interval, one that vanishes at
// the next scrape.
//
// The counter state of a slow series must survive the scrapes in between, so the tracker is swept
// only on scrapes that read the slow counters: a sweep forgets every series not observed since
// the previous sweep, and between two slow scrapes every live series has been observed once.

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

// listDue reports whether the scrape at now lists the RDMA devices again (see above).
func (s *rnicScraper) listDue(now time.Time) bool {
	return s.rediscover || len(s.ports) == 0 || s.slowCountersDue(now)
}

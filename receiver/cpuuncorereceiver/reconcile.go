package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/internal/perf"
)

// reconcile moves what the scraper holds from the old plan into the new one, by key, and reports
// whether a group of the new plan could not be opened:
//   - a counter group of the same signature (PMU, CPU, events in read order) keeps its open
//     handle, its last reading and each counter's last count, matched by event;
//   - a series of the same key keeps its byte total, so that a series fed by other groups, or by
//     the same counters in another order, continues where it was;
//   - groups the new plan does not have are closed, series it does not have are forgotten (if
//     they come back, they start anew), and new series start now, when their counters open.
func (s *uncoreScraper) reconcile(old, next *plan, now time.Time) (missing bool) {
	open := make(map[string]*counterGroup, len(old.groups))
	for _, g := range old.groups {
		if g.handle != nil {
			open[g.signature()] = g
		}
	}
	var denied []string
	var firstDenied error
	for _, g := range next.groups {
		if o, ok := open[g.signature()]; ok {
			g.handle, g.reading, g.lastRead = o.handle, o.reading, o.lastRead
			last := make(map[perf.Attr]uint64, len(o.members))
			for _, m := range o.members {
				last[m.attr] = m.last
			}
			for _, m := range g.members {
				m.last = last[m.attr]
			}
			delete(open, g.signature())
			continue
		}
		if err := s.open(g); err != nil {
			missing = true
			if perf.IsPermission(err) {
				denied = append(denied, g.key)
				if firstDenied == nil {
					firstDenied = err
				}
				continue
			}
			s.log.Fail(g.key, "Cannot open uncore counters", err, zap.String("group", g.key))
		}
	}
	for _, o := range open {
		_ = o.handle.Close()
	}
	if len(denied) > 0 {
		s.log.Fail("perf_event_open", "perf_event_open was denied for uncore counter groups", firstDenied,
			zap.Int("groups", len(denied)), zap.String("first", abbreviate(denied, 3)), zap.String("hint", perf.Hint(firstDenied)))
	} else {
		s.log.Recover("perf_event_open", "perf_event_open allowed again")
	}

	totals := make(map[seriesKey]*aggregate, len(old.aggs))
	for _, a := range old.aggs {
		totals[a.key] = a
	}
	ts := pcommon.NewTimestampFromTime(now)
	for _, a := range next.aggs {
		if o, ok := totals[a.key]; ok {
			a.total, a.failedAt = o.total, o.failedAt
			continue
		}
		// A new series starts when its counters were opened, not at the first scrape after.
		s.series.Observe(a.key, 0, monotonic, ts)
	}

	// Failures of groups and files that are no longer in the plan are forgotten.
	current := map[string]bool{"wrap": true, "perf_event_open": true, "recording": true}
	for _, g := range next.groups {
		current[g.key] = true
	}
	for _, m := range next.mbm {
		current[m.path] = true
	}
	s.log.Forget(func(k string) bool { return current[k] || !s.log.IsFailing(k) })
	return missing
}

package deliverywatchextension // import "github.com/otelcol-iclens/otelcol-iclens/extension/deliverywatchextension"

import "time"

// reading is one exporter's state in one read of the telemetry.
type reading struct {
	backlog  float64 // queued: points or requests (sending_queue), entries (write-ahead log)
	source   string  // which queue
	hasQueue bool
	failed   float64 // points (spans, log records) dropped since the collector started
}

// recentReadings: how many healthy readings say what a healthy queue is.
const recentReadings = 6

type transition int

const (
	unchanged transition = iota
	startedFailing
	recovered
)

// exporterState follows one exporter's queue from check to check. A healthy queue rises and
// falls between sends; one that grows for growing_checks checks in a row, or an exporter that
// drops points, is failing. It has recovered when the queue is back to where it was before it
// started growing (the highest of the last healthy readings before that), and stayed there,
// without drops, for growing_checks checks: the write-ahead log's lag falls each time the
// exporter reads its log again during an outage, then grows again.
type exporterState struct {
	seen      bool
	last      float64
	failed    float64
	growing   int       // checks in a row the queue grew
	recent    []float64 // the last readings while healthy
	level     float64   // the healthy queue: the highest recent reading before it started growing
	runSince  time.Time // when it started growing
	failing   bool
	since     time.Time // when the outage started
	peak      float64
	dropped   float64 // points dropped in this outage
	quietRuns int     // checks in a row the recovered queue stayed low
}

func (s *exporterState) step(r reading, now time.Time, growingChecks int) transition {
	if !s.seen {
		s.seen, s.last, s.failed = true, r.backlog, r.failed
		s.recent = append(s.recent, r.backlog)
		return unchanged
	}
	newDrops := r.failed - s.failed
	if newDrops < 0 { // the counter started over: a new process behind the endpoint
		newDrops = 0
	}
	s.failed = r.failed
	switch {
	case r.backlog > s.last:
		if s.growing == 0 {
			s.runSince = now
		}
		s.growing++
	case r.backlog < s.last:
		s.growing = 0
	}
	s.last = r.backlog

	if !s.failing {
		if len(s.recent) > recentReadings {
			s.recent = s.recent[1:]
		}
		s.recent = append(s.recent, r.backlog)
		if s.growing >= growingChecks || newDrops > 0 {
			s.failing, s.peak, s.dropped, s.quietRuns = true, r.backlog, newDrops, 0
			s.since, s.level = now, r.backlog
			if s.growing >= growingChecks {
				s.since = s.runSince
				before := s.recent[:max(len(s.recent)-s.growing, 1)]
				s.level = before[0]
				for _, b := range before {
					s.level = max(s.level, b)
				}
			}
			s.recent = s.recent[:0]
			return startedFailing
		}
		return unchanged
	}
	s.peak = max(s.peak, r.backlog)
	s.dropped += newDrops
	if r.backlog <= s.level && newDrops == 0 {
		s.quietRuns++
	} else {
		s.quietRuns = 0
	}
	if s.quietRuns >= growingChecks {
		s.failing, s.growing = false, 0
		return recovered
	}
	return unchanged
}

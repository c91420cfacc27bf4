package deliverywatchextension // import "github.com/otelcol-iclens/otelcol-iclens/extension/deliverywatchextension"

import "time"

// reading is one exporter's state in one read of the telemetry.
type reading struct {
	backlog  float64 // queued: points or requests (sending_queue), entries (write-ahead log)
	source   string  // which queue
	hasQueue bool
	failed   float64 // points (spans, log records) dropped after the retries since the collector started
	refused  float64 // points the queue refused (full, or its storage could not write them) since the collector started
}

// recentReadings: how many healthy readings say what a healthy queue is.
const recentReadings = 6

type transition int

const (
	unchanged transition = iota
	startedFailing
	// startedRefusing: a failing exporter's queue refused points for the first time in this
	// outage (its disk filled while the backend was away).
	startedRefusing
	recovered
)

// exporterState follows one exporter's queue from check to check. A healthy queue rises and
// falls between sends; one that grows for growing_checks checks in a row, or an exporter that
// drops points or whose queue refuses them, is failing. It has recovered when the queue is back
// to where it was before it started growing (the highest of the last healthy readings before
// that), and stayed there, without drops or refusals, for growing_checks checks: the write-ahead
// log's lag falls each time the exporter reads its log again during an outage, then grows again.
//
// The fields are exported for the state's storage (stateStore): a restarted collector carries
// on with the outage it was restarted in.
type exporterState struct {
	Seen      bool      `json:"seen"`
	Last      float64   `json:"last"`
	Failed    float64   `json:"failed"`
	Refused   float64   `json:"refused"`
	Growing   int       `json:"growing"`            // checks in a row the queue grew
	Recent    []float64 `json:"recent,omitempty"`   // the last readings while healthy
	Level     float64   `json:"level"`              // the healthy queue: the highest recent reading before it started growing
	RunSince  time.Time `json:"run_since,omitzero"` // when it started growing
	Failing   bool      `json:"failing"`
	Since     time.Time `json:"since,omitzero"` // when the outage started
	Peak      float64   `json:"peak"`
	Dropped   float64   `json:"dropped"`        // points dropped in this outage
	RefusedIn float64   `json:"refused_outage"` // points refused in this outage
	QuietRuns int       `json:"quiet_runs"`     // checks in a row the recovered queue stayed low
}

// restarted marks a state loaded from storage: the new process's counters start at 0.
func (s *exporterState) restarted() {
	s.Failed, s.Refused = 0, 0
}

func (s *exporterState) step(r reading, now time.Time, growingChecks int) transition {
	if !s.Seen {
		// The telemetry is this process's own: points it dropped or refused before the first
		// check (a disk already full at start) are news, counted from 0.
		s.Seen, s.Last = true, r.backlog
		if r.failed == 0 && r.refused == 0 {
			s.Recent = append(s.Recent, r.backlog)
			return unchanged
		}
	}
	// A counter that went down started over: a new process behind the endpoint.
	newDrops := max(r.failed-s.Failed, 0)
	newRefused := max(r.refused-s.Refused, 0)
	s.Failed, s.Refused = r.failed, r.refused
	switch {
	case r.backlog > s.Last:
		if s.Growing == 0 {
			s.RunSince = now
		}
		s.Growing++
	case r.backlog < s.Last:
		s.Growing = 0
	}
	s.Last = r.backlog

	if !s.Failing {
		if len(s.Recent) > recentReadings {
			s.Recent = s.Recent[1:]
		}
		s.Recent = append(s.Recent, r.backlog)
		if s.Growing >= growingChecks || newDrops > 0 || newRefused > 0 {
			s.Failing, s.Peak, s.Dropped, s.RefusedIn, s.QuietRuns = true, r.backlog, newDrops, newRefused, 0
			s.Since, s.Level = now, r.backlog
			if s.Growing >= growingChecks {
				s.Since = s.RunSince
				before := s.Recent[:max(len(s.Recent)-s.Growing, 1)]
				s.Level = before[0]
				for _, b := range before {
					s.Level = max(s.Level, b)
				}
			}
			s.Recent = s.Recent[:0]
			return startedFailing
		}
		return unchanged
	}
	s.Peak = max(s.Peak, r.backlog)
	s.Dropped += newDrops
	firstRefusal := newRefused > 0 && s.RefusedIn == 0
	s.RefusedIn += newRefused
	if r.backlog <= s.Level && newDrops == 0 && newRefused == 0 {
		s.QuietRuns++
	} else {
		s.QuietRuns = 0
	}
	if s.QuietRuns >= growingChecks {
		s.Failing, s.Growing = false, 0
		return recovered
	}
	if firstRefusal {
		return startedRefusing
	}
	return unchanged
}

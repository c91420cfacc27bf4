package counter

import "go.opentelemetry.io/collector/pdata/pcommon"

// startTimes points an mdatagen MetricsBuilder at the start timestamp of the series recorded
// next. The generated builder holds one start time for every point it records, and its
// Reset(WithStartTime(t)) only sets that time; series whose counters reset, or that appeared at
// different moments, need their own. Switching costs nothing when consecutive points share a
// start, so receivers call Use before every cumulative point.
type startTimes struct {
	current pcommon.Timestamp
	reset   func(pcommon.Timestamp)
}

// newStartTimes returns a startTimes that calls reset (typically
// func(t) { mb.Reset(metadata.WithStartTime(t)) }) whenever the start time changes.
func newStartTimes(reset func(pcommon.Timestamp)) *startTimes {
	return &startTimes{reset: reset}
}

// Use makes start the builder's start time, if it is not already.
func (s *startTimes) Use(start pcommon.Timestamp) {
	if start != s.current {
		s.reset(start)
		s.current = start
	}
}

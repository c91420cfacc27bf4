package counter

import "go.opentelemetry.io/collector/pdata/pcommon"

// Series records cumulative counters and gauges into an mdatagen MetricsBuilder with the right
// start timestamp on every point. It owns the Tracker and the builder's start switching, so a call
// site cannot observe a counter and forget to set its start, and a gauge cannot inherit the start
// of the counter recorded before it.
//
// It relies on the generated builder's Reset(WithStartTime(t)) setting only the start time of the
// points recorded next; every receiver has a test that fails if an mdatagen upgrade changes that.
type Series[K comparable] struct {
	*Tracker[K]
	starts     *startTimes
	gaugeStart pcommon.Timestamp
}

// NewSeries returns a Series whose reset sets the builder's start time (typically
// func(t) { mb.Reset(metadata.WithStartTime(t)) }) and whose gauges carry gaugeStart, the moment
// the receiver started. Opts configure the tracker (SinceFirstReading for counters read since
// boot).
func NewSeries[K comparable](reset func(pcommon.Timestamp), gaugeStart pcommon.Timestamp, opts ...Option) *Series[K] {
	return &Series[K]{Tracker: NewTracker[K](opts...), starts: newStartTimes(reset), gaugeStart: gaugeStart}
}

// Record observes raw for key at now and, when the point carries a value, sets the builder's start
// to the series' start and calls record with the value. It returns the point either way (a
// saturated counter reports nothing; the caller may count it).
func (s *Series[K]) Record(key K, raw uint64, spec Spec, now pcommon.Timestamp, record func(v int64)) Point {
	p := s.Observe(key, raw, spec, now)
	if p.Report() {
		s.starts.Use(p.Start)
		record(int64(p.Value))
	}
	return p
}

// RecordValue records a value that is already a cumulative total since start (a total the
// receiver integrated itself), with that start.
func (s *Series[K]) RecordValue(start pcommon.Timestamp, record func()) {
	s.starts.Use(start)
	record()
}

// Gauge records a gauge point with the receiver's start time: a gauge has no series start of its
// own, and without this it would carry whatever start the previous point left in the builder.
func (s *Series[K]) Gauge(record func()) {
	s.starts.Use(s.gaugeStart)
	record()
}

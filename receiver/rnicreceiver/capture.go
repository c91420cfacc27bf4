package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/otelcol-iclens/otelcol-iclens/internal/capture"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver/internal/metadata"
)

// With bursts.capture set the receiver records into a recording.Ring instead of (or beside) a
// file: the recorder that recording.write uses, so that a capture holds exactly what a recording
// would (the tree, each scrape's files and ethtool statistics, the fast sampler's passes), and
// replays the same way. The ring is registered with the capture extension, which writes it when
// the diagnosis raises a verdict or an operator asks. During a replay the ring keeps what is
// replayed, on the replay's clock, so that a demo's burst can be captured as a live one.

// openCapture starts the ring when bursts.capture is set; openSource calls it once the source is
// chosen.
func (s *rnicScraper) openCapture() {
	if s.cfg.Bursts.Capture == nil {
		return
	}
	if s.rec == nil {
		s.rec = &rnicRecorder{root: s.root}
		s.reader.OnRead = s.rec.onRead
	}
	s.rec.ring = recording.NewRing(capture.Window(s.cfg.Bursts.CaptureWindow, s.cfg.CollectionInterval), capture.MaxRingBytes)
}

// registerCapture hands the ring to the capture extension bursts.capture names; Start fails when
// the host has no such extension, as a storage extension's user does.
func (s *rnicScraper) registerCapture(host component.Host) error {
	if s.cfg.Bursts.Capture == nil {
		return nil
	}
	unregister, err := capture.RegisterRing(host, *s.cfg.Bursts.Capture, s.id,
		capture.RingSource{Ring: s.rec.ring, Receiver: metadata.Type.String(), Interval: s.cfg.CollectionInterval})
	if err != nil {
		return err
	}
	s.unregisterCapture = unregister
	return nil
}

// keepReplayedPasses keeps a replayed scrape's passes for the ring, moved to the replay's clock
// (at) like the scrape's own record.
func (r *rnicRecorder) keepReplayedPasses(subs *recording.SubSamples, at func(time.Time) time.Time) {
	for i := range subs.Len() {
		values := make(map[string]uint64, len(subs.Files))
		for path := range subs.Files {
			if v, ok := subs.Value(i, path); ok {
				values[path] = v
			}
		}
		r.burstPeriod = time.Duration(subs.Period)
		r.addPass(at(subs.Time(i)), values)
	}
}

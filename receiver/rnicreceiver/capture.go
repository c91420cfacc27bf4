package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"os"
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

// maxCaptureBytes bounds the ring's memory: an 8-port node at 10 ms passes keeps about 40 KB a
// second of passes (8 ports x 4 counters x 100 passes, encoded), far below it.
const maxCaptureBytes = 64 << 20

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
	s.rec.ring = recording.NewRing(s.cfg.Bursts.CaptureWindow, maxCaptureBytes)
}

// registerCapture hands the ring to the capture extension bursts.capture names; Start fails when
// the host has no such extension, as a storage extension's user does.
func (s *rnicScraper) registerCapture(host component.Host) error {
	if s.cfg.Bursts.Capture == nil {
		return nil
	}
	hub, err := capture.Find(host, *s.cfg.Bursts.Capture)
	if err != nil {
		return err
	}
	s.unregisterCapture = hub.Register(s.id, ringSource{ring: s.rec.ring, interval: s.cfg.CollectionInterval})
	return nil
}

// ringSource is the ring as the extension sees it: it holds nothing of the scraper, so that a
// trigger racing the receiver's shutdown writes what the ring has and touches nothing closed.
type ringSource struct {
	ring     *recording.Ring
	interval time.Duration
}

// WriteCapture writes the ring (capture.Source).
func (r ringSource) WriteCapture(path, note string) (string, error) {
	host, _ := os.Hostname()
	return r.ring.WriteTo(path, recording.Header{Receiver: metadata.Type.String(), Host: host,
		Created: time.Now().UTC(), Interval: recording.Duration(r.interval), Note: note})
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

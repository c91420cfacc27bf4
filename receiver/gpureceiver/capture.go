package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"bytes"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/otelcol-iclens/otelcol-iclens/internal/capture"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver/internal/metadata"
)

// With bursts.capture set the receiver keeps the last bursts.capture_window of what a recording
// would hold in a recording.Ring: the GPUs found (Facts), every poll's samples and the fast
// sampler's passes between them, so that a capture replays as a recording does. The capture
// extension writes it when the diagnosis raises a verdict or an operator asks in the view
// (README.md, "Capturing a burst"). A live source writes to it through the recorder
// (recordLog); a replay keeps what it replays, on the replay's clock, so that a demo's GPU bytes
// are captured on the same time axis as its ports'.

// newCaptureRing is the ring bursts.capture asks for, nil without it.
func newCaptureRing(cfg *Config) *recording.Ring {
	if cfg.Bursts.Capture == nil {
		return nil
	}
	return recording.NewRing(capture.Window(cfg.Bursts.CaptureWindow, cfg.CollectionInterval), capture.MaxRingBytes)
}

// registerCapture hands the ring to the capture extension bursts.capture names, and keeps what
// takes it back at shutdown.
func (s *gpuScraper) registerCapture(host component.Host) error {
	if s.ring == nil {
		return nil
	}
	unregister, err := capture.RegisterRing(host, *s.cfg.Bursts.Capture, s.id,
		capture.RingSource{Ring: s.ring, Receiver: metadata.Type.String(), Interval: s.cfg.CollectionInterval})
	if err != nil {
		return err
	}
	s.unregisterCapture = unregister
	return nil
}

// keepIn makes the replay keep what it replays in ring (nil: nothing).
func (r *replaySource) keepIn(ring *recording.Ring) { r.ring = ring }

// keepPoll writes one replayed poll to the ring at its time on the replay's clock: the facts
// where they changed, the samples as the scrape reads them (already on that clock), the passes
// moved to it with the library timestamps they carry (bursts.go replay shifts the same way).
func (r *replaySource) keepPoll(samples []sample, bursts *recording.SubSamples) {
	if !bytes.Equal(r.facts, r.ringFacts) {
		_ = r.ring.Write(recording.Record{Time: r.recorded, Facts: r.facts})
		r.ringFacts = r.facts
	}
	_ = r.ring.Write(recording.Record{Time: r.recorded, Sample: encodeSample(samples, retimePasses(bursts, r.player.Time))})
}

// retimePasses returns the passes at the times at maps theirs to, each "/ts_us" column (the
// library's timestamp of a value) moved by its pass's shift.
func retimePasses(subs *recording.SubSamples, at func(time.Time) time.Time) *recording.SubSamples {
	if subs.Len() == 0 {
		return subs
	}
	out := &recording.SubSamples{Period: subs.Period}
	for i := range subs.Len() {
		rec := subs.Time(i)
		to := at(rec)
		shiftUs := to.Sub(rec).Microseconds()
		values := make(map[string]uint64, len(subs.Files))
		for k := range subs.Files {
			v, ok := subs.Value(i, k)
			if !ok {
				continue
			}
			if strings.HasSuffix(k, "/ts_us") && v > 0 {
				v = uint64(int64(v) + shiftUs)
			}
			values[k] = v
		}
		out.Add(to, values)
	}
	return out
}

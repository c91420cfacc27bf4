package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"go.opentelemetry.io/collector/component"

	"github.com/otelcol-iclens/otelcol-iclens/internal/capture"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver/internal/metadata"
)

// With bursts.capture set the receiver keeps the last bursts.capture_window of its readings in a
// recording.Ring: what recording.write would write (the host's tree, every group read of each
// scrape, the fast sampler's passes between them), so that a capture replays as a recording does.
// The capture extension writes it when the diagnosis raises a verdict or an operator asks in the
// view (README.md, "Capturing a burst"). During a replay the ring keeps what is replayed, on the
// replay's clock, so that a demo's bursts are captured as live ones would be.

// newCaptureRing is the ring bursts.capture asks for, nil without it.
func newCaptureRing(cfg *Config) *recording.Ring {
	if cfg.Bursts.Capture == nil {
		return nil
	}
	return recording.NewRing(capture.Window(cfg.Bursts.CaptureWindow, cfg.CollectionInterval), capture.MaxRingBytes)
}

// registerCapture hands the seam's ring to the capture extension bursts.capture names, and keeps
// what takes it back at shutdown.
func (s *uncoreScraper) registerCapture(host component.Host) error {
	if s.cfg.Bursts.Capture == nil || s.src == nil || s.src.ring == nil {
		return nil
	}
	unregister, err := capture.RegisterRing(host, *s.cfg.Bursts.Capture, s.id,
		capture.RingSource{Ring: s.src.ring, Receiver: metadata.Type.String(), Interval: s.cfg.CollectionInterval})
	if err != nil {
		return err
	}
	s.unregisterCapture = unregister
	return nil
}

// keepIn makes the replay keep what it replays in ring: the replayed host's tree now, and from
// the next sample on each sample as the scrape reads it (advance), on the replay's clock.
func (o *replayOpener) keepIn(ring *recording.Ring) error {
	tree, err := snapshotHost(o.player.Root())
	if err != nil && len(tree) == 0 {
		return err
	}
	o.ring = ring
	return ring.Write(recording.Record{Tree: tree})
}

// keepSample writes the sample advance moved to into the ring: every event's reading as the
// scrape reads it (a looping replay's counts continued, lapCarry), the passes at their times on
// the replay's clock.
func (o *replayOpener) keepSample(cur map[eventKey]recording.PerfReading, subs *recording.SubSamples) error {
	events := make([]recording.PerfReading, 0, len(cur))
	for _, e := range cur {
		events = append(events, e)
	}
	slices.SortFunc(events, func(a, b recording.PerfReading) int {
		return cmp.Or(cmp.Compare(a.PMU, b.PMU), cmp.Compare(a.CPU, b.CPU), cmp.Compare(a.Config, b.Config),
			cmp.Compare(a.Config1, b.Config1), cmp.Compare(a.Config2, b.Config2))
	})
	b, err := json.Marshal(recording.PerfSample{Perf: events, Bursts: subs.Retimed(o.player.Time)})
	if err != nil {
		return fmt.Errorf("capture ring: %w", err)
	}
	return o.ring.Write(recording.Record{Time: o.recorded, Sample: b})
}

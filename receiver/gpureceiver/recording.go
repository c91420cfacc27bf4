package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
)

// The gpu receiver records and replays at its source seam: what the library reported (the GPUs it
// found) as Facts, and every sample a poll returned as a Sample, so that replay drives the same
// integration, counter and metric code as a live DCGM or NVML (internal/recording/FORMAT.md).

var quantityByName = func() map[string]quantity {
	m := make(map[string]quantity, numQuantities)
	for q := quantity(0); q < numQuantities; q++ {
		m[q.String()] = q
	}
	return m
}()

// openerFor returns how the scraper opens its source: a replay, a recorded live library, or a
// live library.
func openerFor(cfg *Config) sourceOpener {
	switch {
	case cfg.Recording.Replay != "":
		return openReplay
	case cfg.Recording.Write != "":
		return func(cfg *Config, logger *zap.Logger, want quantitySet, numaNode func(string) int64) (source, error) {
			src, err := openLibraries(cfg, logger, want, numaNode)
			if err != nil {
				return nil, err
			}
			return newRecordingSource(src, cfg)
		}
	}
	return openLibraries
}

// recordingSource passes a live source through and writes what it returns.
type recordingSource struct {
	source
	w        *recording.Writer
	sampleUs int64
}

func newRecordingSource(src source, cfg *Config) (source, error) {
	w, err := recording.Create(cfg.Recording.Write, recording.Header{
		Receiver: "gpu", Interval: recording.Duration(cfg.CollectionInterval),
	})
	if err != nil {
		_ = src.close()
		return nil, err
	}
	r := &recordingSource{source: src, w: w, sampleUs: cfg.DCGM.SampleInterval.Microseconds()}
	if err := r.writeFacts(); err != nil {
		_ = src.close()
		_ = w.Close()
		return nil, err
	}
	return r, nil
}

func (r *recordingSource) writeFacts() error {
	f := recording.GPUFacts{Source: r.kind(), SampleIntervalUs: r.sampleUs}
	for _, d := range r.devices() {
		f.Devices = append(f.Devices, recording.GPUDevice{ID: d.id, Name: d.name, UUID: d.uuid, Model: d.model, BusID: d.busID, NUMANode: d.numaNode})
	}
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return r.w.Write(recording.Record{Time: time.Now().UTC(), Facts: b})
}

func (r *recordingSource) refresh() error {
	if err := r.source.refresh(); err != nil {
		return err
	}
	return r.writeFacts()
}

func (r *recordingSource) poll(buf []sample) ([]sample, error) {
	start := len(buf)
	buf, err := r.source.poll(buf)
	if err != nil {
		return buf, err
	}
	rs := recording.GPUSample{Samples: make([]recording.GPUValue, 0, len(buf)-start)}
	for _, s := range buf[start:] {
		rs.Samples = append(rs.Samples, recording.GPUValue{GPU: s.gpu, Q: s.q.String(), TS: s.ts, Valid: s.valid, F: s.f, U: s.u, Bits: s.wrapBits})
	}
	b, err := json.Marshal(rs)
	if err != nil {
		return buf, err
	}
	// A recording that cannot be written must not cost the live metrics.
	_ = r.w.Write(recording.Record{Time: time.Now().UTC(), Sample: b})
	return buf, nil
}

func (r *recordingSource) close() error {
	return errors.Join(r.source.close(), r.w.Close())
}

// replaySource reads a recording instead of a library: one recorded poll per scrape, sample
// timestamps moved to the replay's clock.
type replaySource struct {
	player   *recording.Player
	kindStr  string
	devs     []gpuDevice
	sampleUs int64
	// facts is the Facts payload last applied: a recording carries new facts only where the
	// recorded receiver found its GPUs again, so most polls have nothing to decode.
	facts []byte
}

// sampleInterval is the recorded library's sampling period (0 if the recording does not say):
// the scraper integrates replayed rates with it instead of its own dcgm.sample_interval.
func (r *replaySource) sampleInterval() time.Duration {
	return time.Duration(r.sampleUs) * time.Microsecond
}

func openReplay(cfg *Config, _ *zap.Logger, _ quantitySet, _ func(string) int64) (source, error) {
	rec, err := recording.Open(cfg.Recording.Replay)
	if err != nil {
		return nil, err
	}
	if rec.Header.Receiver != "gpu" {
		return nil, fmt.Errorf("recording %s is of the %q receiver, not gpu", cfg.Recording.Replay, rec.Header.Receiver)
	}
	p, err := recording.NewPlayer(rec, "", cfg.Recording.Loop)
	if err != nil {
		return nil, fmt.Errorf("recording %s: %w", cfg.Recording.Replay, err)
	}
	r := &replaySource{player: p}
	if err := r.applyFacts(); err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("recording %s: %w", cfg.Recording.Replay, err)
	}
	return r, nil
}

func (r *replaySource) applyFacts() error {
	b := r.player.Facts()
	if b == nil {
		return errors.New("no GPU facts before the first sample")
	}
	if r.facts != nil && bytes.Equal(b, r.facts) {
		return nil
	}
	var f recording.GPUFacts
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("facts: %w", err)
	}
	r.kindStr = f.Source
	r.sampleUs = f.SampleIntervalUs
	r.devs = r.devs[:0]
	for _, d := range f.Devices {
		r.devs = append(r.devs, gpuDevice{id: d.ID, name: d.Name, uuid: d.UUID, model: d.Model, busID: d.BusID, numaNode: d.NUMANode})
	}
	r.facts = b
	return nil
}

func (r *replaySource) kind() string         { return r.kindStr }
func (r *replaySource) devices() []gpuDevice { return r.devs }
func (r *replaySource) refresh() error       { return nil }
func (r *replaySource) close() error         { return r.player.Close() }

func (r *replaySource) poll(buf []sample) ([]sample, error) {
	rec, ok, err := r.player.Next(time.Now())
	if err != nil || !ok {
		// The end of a non-looping replay: nothing new, as a GPU that went quiet.
		return buf, err
	}
	if err := r.applyFacts(); err != nil {
		return buf, err
	}
	if rec.Sample == nil {
		return buf, nil
	}
	var rs recording.GPUSample
	if err := json.Unmarshal(rec.Sample, &rs); err != nil {
		return buf, fmt.Errorf("sample at %s: %w", rec.Time, err)
	}
	shiftUs := r.player.Time(rec.Time).Sub(rec.Time).Microseconds()
	for _, v := range rs.Samples {
		q, ok := quantityByName[v.Q]
		if !ok || v.GPU < 0 || v.GPU >= len(r.devs) {
			continue // a quantity this build does not know, or a GPU the facts do not list
		}
		buf = append(buf, sample{gpu: v.GPU, q: q, ts: v.TS + shiftUs, valid: v.Valid, f: v.F, u: v.U, wrapBits: v.Bits})
	}
	return buf, nil
}

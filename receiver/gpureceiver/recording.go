package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/internal/errtrack"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver/internal/metadata"
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

// recordLog writes the recording Start created, the capture ring (bursts.capture), or both, and
// says once, at Warn, when a write to the file fails: a recording that cannot be written must not
// cost the live metrics, but the operator must know that it has a hole.
type recordLog struct {
	w    *recording.Writer // nil without recording.write
	ring *recording.Ring   // nil without bursts.capture
	log  *errtrack.Log
	// passes are the fast sampler's passes, written with the next poll's sample; nil without it.
	passes *burstPasses
}

func newRecordLog(logger *zap.Logger, w *recording.Writer, ring *recording.Ring) *recordLog {
	return &recordLog{w: w, ring: ring, log: errtrack.NewLog(logger)}
}

func (r *recordLog) write(rec recording.Record) {
	if r.ring != nil {
		_ = r.ring.Write(rec) // only a record that cannot be encoded fails, and these are plain numbers
	}
	if r.w == nil {
		return
	}
	if err := r.w.Write(rec); err != nil {
		r.log.Fail(r.w.Path(), msgRecordingFailed, err)
		return
	}
	r.log.Recover(r.w.Path(), "Writing the GPU recording works again")
}

// recordingSource passes a live source through and writes what it returns. It does not own the
// recording: every source opened after a reconnection writes to the same one, which Shutdown
// closes.
type recordingSource struct {
	source
	rec      *recordLog
	sampleUs int64
	// factsDue: a rediscovery happened; its facts are written with the next poll, at the
	// scrape's time.
	factsDue bool
}

func newRecordingSource(src source, rec *recordLog, sampleInterval time.Duration, now time.Time) *recordingSource {
	r := &recordingSource{source: src, rec: rec, sampleUs: sampleInterval.Microseconds()}
	r.writeFacts(now)
	return r
}

func (r *recordingSource) writeFacts(now time.Time) {
	f := recording.GPUFacts{Source: r.kind(), SampleIntervalUs: r.sampleUs}
	for _, d := range r.devices() {
		f.Devices = append(f.Devices, recording.GPUDevice{ID: d.id, Name: d.name, UUID: d.uuid, Model: d.model, BusID: d.busID, NUMANode: d.numaNode})
	}
	b, _ := json.Marshal(f) // plain strings and numbers: cannot fail
	r.rec.write(recording.Record{Time: now.UTC(), Facts: b})
}

func (r *recordingSource) refresh() error {
	if err := r.source.refresh(); err != nil {
		return err
	}
	r.factsDue = true
	return nil
}

func (r *recordingSource) poll(now time.Time, buf []sample) ([]sample, error) {
	if r.factsDue {
		r.factsDue = false
		r.writeFacts(now)
	}
	start := len(buf)
	buf, err := r.source.poll(now, buf)
	if isSourceLost(err) {
		return buf, err
	}
	r.rec.write(recording.Record{Time: now.UTC(), Sample: encodeSample(buf[start:], r.rec.passes.take())})
	return buf, err
}

// encodeSample is a poll's Sample: its samples and the fast sampler's passes since the last one.
func encodeSample(samples []sample, bursts *recording.SubSamples) []byte {
	rs := recording.GPUSample{Samples: make([]recording.GPUValue, 0, len(samples)), Bursts: bursts}
	for _, s := range samples {
		rs.Samples = append(rs.Samples, recording.GPUValue{GPU: s.gpu, Q: s.q.String(), TS: s.ts, Valid: s.valid, F: s.f, U: s.u, Bits: s.wrapBits, Entity: s.entity})
	}
	b, _ := json.Marshal(rs) // plain numbers: cannot fail
	return b
}

// burstReader is the live source's: the fast sampler reads the library beside the recording, whose
// samples keep its passes (recordLog.passes).
func (r *recordingSource) burstReader() (burstReader, error) { return burstReaderOf(r.source) }

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
	// clock moves the recorded times onto the replay's clock (recording.ReplayClock); stamp is
	// the time of the last poll's recorded scrape on it, which the scrape's points carry, so
	// that a rate over a replay is the recorded one however late the scrapes run.
	clock    *recording.ReplayClock
	recorded time.Time
	stamp    time.Time
	// bursts are the last polled sample's fast-sampler passes, until the scrape takes them.
	bursts *recording.SubSamples
	// ring keeps what is replayed, on the replay's clock (bursts.capture, capture.go); nil
	// otherwise. ringFacts is the facts payload last written to it.
	ring      *recording.Ring
	ringFacts []byte
}

// takeBursts returns the last polled sample's passes, once.
func (r *replaySource) takeBursts() *recording.SubSamples {
	b := r.bursts
	r.bursts = nil
	return b
}

// sampleInterval is the recorded library's sampling period (0 if the recording does not say):
// the scraper integrates replayed rates with it instead of its own dcgm.sample_interval.
func (r *replaySource) sampleInterval() time.Duration {
	return time.Duration(r.sampleUs) * time.Microsecond
}

// openReplay opens the replay at path (recording.OpenReplay: the file, its format and that it is
// a gpu recording) and applies its first facts; errors name the file.
func openReplay(path string, loop bool, interval time.Duration) (*replaySource, error) {
	p, err := recording.OpenReplay(path, metadata.Type.String(), loop)
	if err != nil {
		return nil, err
	}
	r := &replaySource{player: p, clock: recording.NewReplayClock(interval)}
	if err := r.applyFacts(); err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("recording %s: %w", path, err)
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

// pointTime is the time for the points of the scrape that made the last poll.
func (r *replaySource) pointTime() time.Time { return r.stamp }

func (r *replaySource) poll(now time.Time, buf []sample) ([]sample, error) {
	rec, ok, err := r.player.Next(now)
	if ok {
		r.recorded = r.player.Time(rec.Time)
	}
	r.stamp = r.clock.Stamp(r.recorded, now)
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
	r.bursts = rs.Bursts
	// The samples keep the recorded spacing on the player's clock (the integration and the XID
	// order go by it); only the points' time follows the ReplayClock.
	shiftUs := r.player.Time(rec.Time).Sub(rec.Time).Microseconds()
	start := len(buf)
	for _, v := range rs.Samples {
		q, ok := quantityByName[v.Q]
		if !ok || v.GPU < 0 || v.GPU >= len(r.devs) {
			continue // a quantity this build does not know, or a GPU the facts do not list
		}
		buf = append(buf, sample{gpu: v.GPU, q: q, ts: v.TS + shiftUs, valid: v.Valid, f: v.F, u: v.U, wrapBits: v.Bits, entity: v.Entity})
	}
	if r.ring != nil {
		r.keepPoll(buf[start:], rs.Bursts)
	}
	return buf, nil
}

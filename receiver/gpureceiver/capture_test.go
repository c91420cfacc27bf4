//go:build linux && cgo

package gpureceiver

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-iclens/otelcol-iclens/internal/capture/capturetest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver/internal/metadata"
)

// TestGPUCaptureThenReplay (#26): with bursts.capture the receiver keeps what a recording would
// hold in a ring registered with the capture extension. A capture written after the JANOG step
// on gpu0's PCIe (bursts_nvml_test.go, NVML reading the counters a few ms late) is a recording that
// replays to the live peaks and the live bytes, as recording.write's file does
// (TestBurstsRecordThenReplay). Replayed with bursts.capture on, the replay's own capture replays
// to them again, its passes and their library timestamps on the replay's clock.
func TestGPUCaptureThenReplay(t *testing.T) {
	hub, host := capturetest.NewHost()
	r := newNVMLBurstRig(t, func(c *Config) {
		c.Bursts.Capture = &capturetest.ID
		c.Bursts.CaptureWindow = 5 * time.Second
	}, func(r *nvmlBurstRig) { r.jitter, r.host = true, host })
	require.Contains(t, hub.Sources, r.s.id, "the ring is registered under the receiver's id")
	live := r.steps(t)

	first, err := hub.Sources[r.s.id].WriteCapture(filepath.Join(t.TempDir(), "c.jsonl.gz"), "host memory bounce")
	require.NoError(t, err)
	rec, err := recording.Open(first)
	require.NoError(t, err)
	assert.Equal(t, "gpu", rec.Header.Receiver)
	assert.Equal(t, "host memory bounce", rec.Header.Note)
	require.Len(t, rec.Samples(), 2, "the first poll and the one after the passes")
	var s recording.GPUSample
	require.NoError(t, json.Unmarshal(rec.Samples()[1].Sample, &s))
	assert.Equal(t, 121, s.Bursts.Len(), "every pass of the 1.2 s at 10 ms")
	require.NoError(t, r.s.shutdown(context.Background()))
	assert.Empty(t, hub.Sources, "shutdown takes the ring back")

	again := replayGPUAndCapture(t, first, live)
	replayGPUAndCapture(t, again, live)
}

// replayGPUAndCapture replays file with bursts.capture on, checks that it serves the live peaks
// and PCIe bytes, and returns the replay's own capture after checking that its passes lie in the
// intervals of their samples, with library timestamps beside them.
func replayGPUAndCapture(t *testing.T, file string, live pmetric.Metrics) string {
	t.Helper()
	hub, host := capturetest.NewHost()
	cfg := createDefaultConfig().(*Config)
	cfg.Recording.Replay = file
	cfg.CollectionInterval = time.Second
	cfg.Bursts.Capture = &capturetest.ID
	require.NoError(t, cfg.Validate())
	replay := newPatientScraper(cfg, receivertest.NewNopSettings(metadata.Type))
	at := time.Now()
	replay.now = func() time.Time { at = at.Add(time.Second); return at }
	require.NoError(t, replay.start(context.Background(), host))
	defer func() { require.NoError(t, replay.shutdown(context.Background())) }()
	var m pmetric.Metrics
	for range 2 {
		m = scrapeOnce(t, replay)
	}
	for _, dev := range []string{"gpu0", "gpu3"} {
		for _, dir := range []string{"transmit", "receive"} {
			assert.Equal(t, peak(t, live, dev, dir), peak(t, m, dev, dir), "%s: %s %s", file, dev, dir)
			assert.Equal(t, one(t, live, "interconnect.io", "device", dev, "component", "gpu_pcie", "direction", dir).i,
				one(t, m, "interconnect.io", "device", dev, "component", "gpu_pcie", "direction", dir).i, "%s: %s %s bytes", file, dev, dir)
		}
	}
	out, err := hub.Sources[replay.id].WriteCapture(filepath.Join(t.TempDir(), "again.jsonl.gz"), "again")
	require.NoError(t, err)
	// Each pass carries NVML's own timestamps (ts_us), close to the pass's time.
	passes := capturetest.PassesInTheirSamples(t, out, func(sample json.RawMessage) *recording.SubSamples {
		var gs recording.GPUSample
		require.NoError(t, json.Unmarshal(sample, &gs))
		return gs.Bursts
	}, func(b *recording.SubSamples, p int) {
		for k := range b.Files {
			if us, ok := b.Value(p, k); ok && strings.HasSuffix(k, "/ts_us") {
				d := time.UnixMicro(int64(us)).Sub(b.Time(p))
				assert.True(t, d > -time.Second && d < time.Second, "%s of pass %v is %v off it", k, b.Time(p), d)
			}
		}
	})
	assert.Equal(t, 121, passes)
	return out
}

// TestGPUCaptureNamesAMissingExtension: bursts.capture naming an extension the host does not have
// fails Start, naming it, and leaves nothing open.
func TestGPUCaptureNamesAMissingExtension(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Bursts.Capture = &capturetest.ID
	s := newPatientScraper(cfg, receivertest.NewNopSettings(metadata.Type))

	err := s.start(context.Background(), componenttest.NewNopHost())
	assert.ErrorContains(t, err, `capture: extension "capture" is not configured in service.extensions`)
	require.NoError(t, s.shutdown(context.Background()))
}

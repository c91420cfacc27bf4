package cpuuncorereceiver

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-iclens/otelcol-iclens/internal/capture/capturetest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/perf"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver/internal/metadata"
)

// TestUncoreBurstCaptureThenReplay (#26): with bursts.capture the receiver keeps its readings in
// a ring registered with the capture extension. A capture written after the JANOG step (40 ms of
// host-memory reads at 100 GB/s every 600 ms, bursts_test.go) is a recording that replays to the
// live peak and the live bytes, as recording.write's file does (TestBurstsRecordThenReplay).
// Replayed with bursts.capture on, the replay's own capture replays to them again: a demo's
// bursts are captured as live ones would be.
func TestUncoreBurstCaptureThenReplay(t *testing.T) {
	hub, host := capturetest.NewHost()
	r := newBurstRigOn(t, host, func(c *Config) {
		c.Bursts.Capture = &capturetest.ID
		c.Bursts.CaptureWindow = 5 * time.Second
	})
	require.Contains(t, hub.Sources, r.id, "the ring is registered under the receiver's id")
	live := r.steps(t)
	livePeak, ok := memoryPeak(t, live)
	require.True(t, ok)
	liveBytes := ioPoints(t, live)[io("cpu_memory", "read", "socket0/imc", "", 0)].value

	first, err := hub.Sources[r.id].WriteCapture(filepath.Join(t.TempDir(), "c.jsonl.gz"), "host memory bounce")
	require.NoError(t, err)
	rec, err := recording.Open(first)
	require.NoError(t, err)
	assert.Equal(t, "cpuuncore", rec.Header.Receiver)
	assert.Equal(t, "host memory bounce", rec.Header.Note)
	require.Len(t, rec.Samples(), 2, "the baseline scrape and the one after the passes")
	var s recording.PerfSample
	require.NoError(t, json.Unmarshal(rec.Samples()[1].Sample, &s))
	assert.Equal(t, 121, s.Bursts.Len(), "every pass of the 1.2 s at 10 ms")
	require.NoError(t, r.shutdown(t.Context()))
	assert.Empty(t, hub.Sources, "shutdown takes the ring back")

	again := replayAndCapture(t, first, livePeak, liveBytes)
	replayAndCapture(t, again, livePeak, liveBytes)
}

// replayAndCapture replays file with bursts.capture on, checks that it serves the live peak and
// bytes, and returns the replay's own capture.
func replayAndCapture(t *testing.T, file string, livePeak float64, liveBytes int64) string {
	t.Helper()
	hub, host := capturetest.NewHost()
	cfg := createDefaultConfig().(*Config)
	cfg.Recording.Replay = file
	cfg.CollectionInterval = time.Second
	cfg.PCIe.Enabled = false
	cfg.Bursts.Capture = &capturetest.ID
	require.NoError(t, cfg.Validate())
	replay := newScraper(cfg, receivertest.NewNopSettings(metadata.Type), liveOpener)
	at := time.Now()
	replay.now = func() time.Time { at = at.Add(time.Second); return at }
	require.NoError(t, replay.start(t.Context(), host))
	defer func() { require.NoError(t, replay.shutdown(t.Context())) }()
	var md pmetric.Metrics
	var err error
	for range 2 {
		md, err = replay.scrape(t.Context())
		require.NoError(t, err)
	}
	peak, ok := memoryPeak(t, md)
	require.True(t, ok, "%s: the replay folds the captured passes", file)
	assert.Equal(t, livePeak, peak, file)
	assert.Equal(t, liveBytes, ioPoints(t, md)[io("cpu_memory", "read", "socket0/imc", "", 0)].value, file)
	out, err := hub.Sources[replay.id].WriteCapture(filepath.Join(t.TempDir(), "again.jsonl.gz"), "again")
	require.NoError(t, err)
	// The replay's capture is on the replay's clock, its passes with it: each sample's passes lie
	// in the interval the sample ends.
	passes := capturetest.PassesInTheirSamples(t, out, func(sample json.RawMessage) *recording.SubSamples {
		var ps recording.PerfSample
		require.NoError(t, json.Unmarshal(sample, &ps))
		return ps.Bursts
	}, nil)
	assert.Equal(t, 121, passes)
	return out
}

// TestUncoreCaptureNamesAMissingExtension: bursts.capture naming an extension the host does not
// have fails Start, naming it, and leaves nothing open.
func TestUncoreCaptureNamesAMissingExtension(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.RootPath, _ = filepath.Abs(filepath.Join("testdata", "skx"))
	cfg.Bursts.Capture = &capturetest.ID
	fake := newFakeOpener()
	s := newScraper(cfg, receivertest.NewNopSettings(metadata.Type), func() (perf.Opener, error) { return fake, nil })
	err := s.start(t.Context(), componenttest.NewNopHost())
	assert.ErrorContains(t, err, `capture: extension "capture" is not configured in service.extensions`)
	assert.Nil(t, s.src)
	require.NoError(t, s.shutdown(t.Context()))
}

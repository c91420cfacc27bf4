package rnicreceiver

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-iclens/otelcol-iclens/internal/capture/capturetest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver/internal/metadata"
)

var captureID = capturetest.ID

// TestBurstCaptureThenReplay: with bursts.capture the receiver keeps its readings in a ring
// registered with the capture extension. A capture written after the JANOG step (40 ms at line
// rate every 600 ms, on the synthetic fixture of burst_test.go) is a recording that replays to the
// live peak, time above and histogram, as recording.write's file does (TestBurstRecordThenReplay).
// Replayed with bursts.capture on, the replay's own capture replays to them again: a demo's
// burst is captured as a live one.
func TestBurstCaptureThenReplay(t *testing.T) {
	hub, host := capturetest.NewHost()
	r := newBurstRigOn(t, host, func(cfg *Config) {
		cfg.Bursts.Capture = &captureID
		cfg.Bursts.CaptureWindow = 5 * time.Second
	})
	require.Contains(t, hub.Sources, r.s.id, "the ring is registered under the receiver's id")
	r.samplePasses(t, 0, 1200*time.Millisecond)
	r.clock.set(testEpoch.Add(1200 * time.Millisecond))
	live, err := r.s.scrape(context.Background())
	require.NoError(t, err)

	first, err := hub.Sources[r.s.id].WriteCapture(filepath.Join(t.TempDir(), "c.jsonl.gz"), "on demand")
	require.NoError(t, err)
	rec, err := recording.Open(first)
	require.NoError(t, err)
	assert.Equal(t, "rnic", rec.Header.Receiver)
	assert.Equal(t, "on demand", rec.Header.Note)
	require.Len(t, rec.Samples(), 2, "the discovery's scrape and the one after the passes")
	require.NoError(t, r.s.shutdown(context.Background()))
	assert.Empty(t, hub.Sources, "shutdown takes the ring back")

	again := replayAndCapture(t, first, live)
	replayAndCapture(t, again, live)
}

// replayAndCapture replays file with bursts.capture on, checks the bursts against want's and
// returns the replay's own capture.
func replayAndCapture(t *testing.T, file string, want pmetric.Metrics) string {
	t.Helper()
	hub, host := capturetest.NewHost()
	replay, _ := newTestScraperOn(t, host, t.TempDir(), func(cfg *Config) {
		cfg.Recording.Replay = file
		cfg.CollectionInterval = time.Second
		cfg.Bursts.Shares = []float64{0.5, 0.9}
		cfg.Bursts.Capture = &captureID
		cfg.Bursts.CaptureWindow = 5 * time.Second
	}, func(s *rnicScraper) { s.clock = stepClock() })
	var md pmetric.Metrics
	var err error
	for range 2 {
		md, err = replay.scrape(context.Background())
		require.NoError(t, err)
	}
	assertSameBursts(t, want, md)
	out, err := hub.Sources[replay.id].WriteCapture(filepath.Join(t.TempDir(), "c.jsonl.gz"), "again")
	require.NoError(t, err)
	return out
}

// TestCaptureNamesAMissingExtension: Start fails naming the extension bursts.capture names when
// the collector has none by that id.
func TestCaptureNamesAMissingExtension(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.RootPath = t.TempDir()
	id := component.MustNewIDWithName("capture", "missing")
	cfg.Bursts.Capture = &id
	s := newScraper(cfg, receivertest.NewNopSettings(metadata.Type))
	err := s.start(context.Background(), componenttest.NewNopHost())
	assert.ErrorContains(t, err, `capture: extension "capture/missing" is not configured in service.extensions`)
}

// TestCaptureBeforeAnyScrape: a trigger before the first scrape writes nothing and says why.
func TestCaptureBeforeAnyScrape(t *testing.T) {
	hub, host := capturetest.NewHost()
	s, _ := newTestScraperOn(t, host, t.TempDir(), func(cfg *Config) { cfg.Bursts.Capture = &captureID }, nil)
	_, err := hub.Sources[s.id].WriteCapture(filepath.Join(t.TempDir(), "c.jsonl.gz"), "x")
	assert.ErrorIs(t, err, recording.ErrRingEmpty)
}

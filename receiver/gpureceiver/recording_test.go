package gpureceiver

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver/internal/metadata"
)

// TestRecordThenReplay records what the (fake) DCGM source returns over two scrapes and replays
// the file through a fresh scraper: the replayed metrics carry the same integrated bytes.
func TestRecordThenReplay(t *testing.T) {
	file := filepath.Join(t.TempDir(), "node1-gpu.jsonl.gz")
	f := newFakeDCGM(2)
	base := int64(1_800_000_000) * sec
	for k := int64(1); k <= 10; k++ {
		f.addSample(0, dcgmFieldPCIeTxRate, base+k*sec, 1000*k)
		f.addSample(1, dcgmFieldPCIeTxRate, base+k*sec, 7)
	}
	live, _, clock := newTestScraper(t, f, func(cfg *Config) { cfg.Recording.Write = file })
	require.NoError(t, live.start(context.Background(), nil))
	m1 := scrapeOnce(t, live)
	for k := int64(11); k <= 15; k++ {
		f.addSample(0, dcgmFieldPCIeTxRate, base+k*sec, 100)
	}
	clock.t = clock.t.Add(10 * time.Second)
	m2 := scrapeOnce(t, live)
	require.NoError(t, live.shutdown(context.Background()))
	liveTx := one(t, m2, "interconnect.io", "component", "gpu_pcie", "direction", "transmit", "device", "gpu0").i
	require.EqualValues(t, 54000+500, liveTx)

	rec, err := recording.Open(file)
	require.NoError(t, err)
	assert.Equal(t, "gpu", rec.Header.Receiver)
	assert.Len(t, rec.Samples(), 2)

	cfg := createDefaultConfig().(*Config)
	cfg.Recording.Replay = file
	require.NoError(t, cfg.Validate())
	core, logs := observer.New(zap.DebugLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	replay := newPatientScraper(cfg, set)
	require.NoError(t, replay.start(context.Background(), nil))
	defer func() { require.NoError(t, replay.shutdown(context.Background())) }()
	r1 := scrapeOnce(t, replay)
	r2 := scrapeOnce(t, replay)
	assert.Equal(t,
		one(t, m1, "interconnect.io", "component", "gpu_pcie", "direction", "transmit", "device", "gpu0").i,
		one(t, r1, "interconnect.io", "component", "gpu_pcie", "direction", "transmit", "device", "gpu0").i)
	assert.EqualValues(t, liveTx, one(t, r2, "interconnect.io", "component", "gpu_pcie", "direction", "transmit", "device", "gpu0").i)
	info := one(t, r2, "gpu.info", "device", "gpu1")
	assert.Equal(t, "0000:3b:00.0", info.attrs["pci.bus_id"])
	assert.Equal(t, "dcgm", info.attrs["source"])
	assert.Equal(t, 1, logs.FilterMessage("Reading GPU metrics").Len())

	// The end of a non-looping replay: no new samples, no errors, no crash.
	r3 := scrapeOnce(t, replay)
	assert.Empty(t, find(r3, "interconnect.io", "direction", "receive", "device", "gpu0"))
}

func TestReplayRefusesOtherReceivers(t *testing.T) {
	file := filepath.Join(t.TempDir(), "rnic.jsonl")
	w, err := recording.Create(file, recording.Header{Receiver: "rnic"})
	require.NoError(t, err)
	require.NoError(t, w.Write(recording.Record{Time: time.Now(), Files: map[string]string{"x": "1"}}))
	require.NoError(t, w.Close())
	cfg := createDefaultConfig().(*Config)
	cfg.Recording.Replay = file
	_, err = openReplay(cfg.Recording.Replay, false, time.Second)
	assert.ErrorContains(t, err, `of the "rnic" receiver, not gpu`)
}

// TestRecordingSurvivesReconnect: a recording of four scrapes with a hostengine loss in the
// middle is one file holding every scrape's samples: the reconnection after "Lost the GPU
// library" goes on writing the recording Start created.
func TestRecordingSurvivesReconnect(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "node1-gpu.jsonl")
	f := newFakeDCGM(1)
	f.setInt(0, dcgmFieldGPUUtil, 1)
	live, _, clock := newTestScraper(t, f, func(cfg *Config) { cfg.Recording.Write = file })
	require.NoError(t, live.start(context.Background(), nil))
	scrapeOnce(t, live)
	clock.t = clock.t.Add(10 * time.Second)
	scrapeOnce(t, live)
	// nv-hostengine restarts: the poll fails with DCGM_ST_CONNECTION_NOT_VALID.
	f.historyErr = &dcgmError{op: "reading samples", code: dcgmStConnectionNotValid, msg: "dcgmGetValuesSince_v2 failed with error code -21"}
	clock.t = clock.t.Add(10 * time.Second)
	_, _ = live.scrape(context.Background())
	f.historyErr = nil
	for i := 0; i < 2; i++ {
		clock.t = clock.t.Add(10 * time.Second)
		scrapeOnce(t, live)
	}
	require.NoError(t, live.shutdown(context.Background()))
	require.Equal(t, 2, f.connects, "the fake saw the reconnection")

	files, err := filepath.Glob(filepath.Join(dir, "*"))
	require.NoError(t, err)
	assert.Equal(t, []string{file}, files, "one run, one file")
	rec, err := recording.Open(file)
	require.NoError(t, err)
	assert.Len(t, rec.Samples(), 4, "every successful poll's samples, before and after the loss")
}

// TestBadReplayFailsStart: a replay that is missing, or of another receiver, fails Start with an
// error naming the file, as rnic and cpuuncore do, instead of being retried as "no GPU library".
func TestBadReplayFailsStart(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "rnic.jsonl")
	w, err := recording.Create(other, recording.Header{Receiver: "rnic"})
	require.NoError(t, err)
	require.NoError(t, w.Write(recording.Record{Time: time.Now(), Files: map[string]string{"x": "1"}}))
	require.NoError(t, w.Close())
	for _, tc := range []struct{ file, want string }{
		{filepath.Join(dir, "missing.jsonl.gz"), "missing.jsonl.gz"},
		{other, `of the "rnic" receiver, not gpu`},
	} {
		cfg := createDefaultConfig().(*Config)
		cfg.Recording.Replay = tc.file
		require.NoError(t, cfg.Validate())
		core, logs := observer.New(zap.DebugLevel)
		set := receivertest.NewNopSettings(metadata.Type)
		set.Logger = zap.New(core)
		s := newPatientScraper(cfg, set)
		err := s.start(context.Background(), nil)
		require.Error(t, err, tc.file)
		assert.ErrorContains(t, err, tc.file)
		assert.ErrorContains(t, err, tc.want)
		assert.Zero(t, logs.FilterMessageSnippet("no GPU library").Len())
		require.NoError(t, s.shutdown(context.Background()))
	}
}

// TestRecordingWriteFailureSaidOnce: a recording that cannot be written (here: its file already
// closed, as after a full disk took the descriptor) is said once at warn level, and the live
// source goes on.
func TestRecordingWriteFailureSaidOnce(t *testing.T) {
	w, err := recording.CreateFor(filepath.Join(t.TempDir(), "gpu.jsonl"), "gpu", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	core, logs := observer.New(zap.DebugLevel)
	rl := newRecordLog(zap.New(core), w, nil)
	for i := 0; i < 3; i++ {
		rl.write(recording.Record{Time: time.Unix(1_800_000_000, 0), Sample: []byte(`{"samples":[]}`)})
	}
	failed := logs.FilterMessage(msgRecordingFailed).All()
	require.Len(t, failed, 1, "said once")
	assert.Equal(t, zap.WarnLevel, failed[0].Level)
}

// TestReplayStampsRecordedTime: a replay's points carry the times the polls were recorded at
// (internal/recording ReplayClock), so that a rate over a replay is the recorded one however late
// the scrapes run. Five scrapes 10 s apart are recorded with a GPU sending 1000 B/s (DCGM rate
// samples each second), then replayed by scrapes up to 8 s late (a loaded machine): every
// interval's transmit rate from the points must be 1000 B/s.
func TestReplayStampsRecordedTime(t *testing.T) {
	file := filepath.Join(t.TempDir(), "node1-gpu.jsonl")
	f := newFakeDCGM(1)
	base := int64(1_800_000_000) * sec
	live, _, clock := newTestScraper(t, f, func(cfg *Config) { cfg.Recording.Write = file })
	require.NoError(t, live.start(context.Background(), nil))
	for k := int64(0); k < 5; k++ {
		for j := 10*k - 9; j <= 10*k; j++ {
			f.addSample(0, dcgmFieldPCIeTxRate, base+j*sec, 1000)
		}
		clock.t = time.Unix(1_800_000_000+10*k, 0)
		scrapeOnce(t, live)
	}
	require.NoError(t, live.shutdown(context.Background()))

	cfg := createDefaultConfig().(*Config)
	cfg.Recording.Replay = file
	cfg.CollectionInterval = 10 * time.Second
	replay := newPatientScraper(cfg, receivertest.NewNopSettings(metadata.Type))
	start := time.Now()
	scrape := 0
	late := []time.Duration{0, 8 * time.Second, 0, 5 * time.Second, time.Second}
	replay.now = func() time.Time { return start.Add(time.Duration(scrape)*10*time.Second + late[scrape]) }
	require.NoError(t, replay.start(context.Background(), nil))
	defer func() { require.NoError(t, replay.shutdown(context.Background())) }()
	var prev pmetric.NumberDataPoint
	for i := range late {
		scrape = i
		md := scrapeOnce(t, replay)
		p, ok := metrictest.Find(md, "interconnect.io", map[string]any{"component": "gpu_pcie", "direction": "transmit", "device": "gpu0"})
		require.True(t, ok, "scrape %d", i)
		if i > 1 { // the first interval's bytes start at the first sample, not at the first scrape
			dt := p.Timestamp().AsTime().Sub(prev.Timestamp().AsTime()).Seconds()
			assert.InDelta(t, 1000.0, float64(p.IntValue()-prev.IntValue())/dt, 1e-9, "rate of interval %d", i)
		}
		prev = p
	}
}

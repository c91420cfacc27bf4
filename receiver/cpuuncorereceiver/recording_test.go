package cpuuncorereceiver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap/zapcore"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/perf"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver/internal/metadata"
)

// TestRecordThenReplay records two scrapes of the SKX fixture (known counts from the fake source)
// through the configuration (recording.write, chosen in Start) and replays the file through the
// receiver: discovery runs on the recorded tree and the replayed interconnect.io values are the
// live ones.
func TestRecordThenReplay(t *testing.T) {
	file := filepath.Join(t.TempDir(), "node1-cpuuncore.jsonl")
	live := newTestScraper(t, "skx", func(c *Config) { c.Recording.Write = file })
	var liveIO []map[ioKey]point
	for i := range 2 {
		live.fake.add(0, skxIMC0, skxCASRead, uint64(1000*(i+1)))
		live.fake.add(0, skxIMC0, skxCASWrite, 500)
		live.fake.add(28, skxFree0+2, bwIn0+0x300, 3)
		live.tick(5 * time.Second)
		md, err := live.scrape(t.Context())
		require.NoError(t, err)
		liveIO = append(liveIO, ioPoints(t, md))
	}
	require.NoError(t, live.shutdown(t.Context()))

	rec, err := recording.Open(file)
	require.NoError(t, err)
	require.Len(t, rec.Samples(), 2)
	assert.NotEmpty(t, rec.Records[0].Tree, "the host tree is recorded")
	assert.Equal(t, live.clock.Add(-5*time.Second).UTC(), rec.Samples()[0].Time.UTC(), "records carry the scrape's clock")

	rcfg := createDefaultConfig().(*Config)
	rcfg.Recording.Replay = file
	require.NoError(t, rcfg.Validate())
	sink := new(consumertest.MetricsSink)
	r, err := NewFactory().CreateMetrics(t.Context(), receivertest.NewNopSettings(metadata.Type), rcfg, sink)
	require.NoError(t, err)
	s := newScraper(rcfg, receivertest.NewNopSettings(metadata.Type), liveOpener)
	require.NoError(t, s.start(t.Context(), nil))
	defer func() { require.NoError(t, s.shutdown(t.Context())) }()
	for i := range 2 {
		md, err := s.scrape(t.Context())
		require.NoError(t, err)
		got := ioPoints(t, md)
		require.Len(t, got, len(liveIO[i]), "replay discovers the same series")
		for k, p := range liveIO[i] {
			assert.Equal(t, p.value, got[k].value, "scrape %d %s", i, k)
		}
	}
	assert.Equal(t, int64((1000+2000)*64), liveIO[1][io("cpu_memory", "read", "socket0/imc", "", 0)].value, "the fixture's counts came through")

	// The factory's receiver replays the same way (one createMetricsReceiver for every mode).
	require.NoError(t, r.Start(t.Context(), componenttest.NewNopHost()))
	require.NoError(t, r.Shutdown(t.Context()))
}

// TestRecordingWriterOncePerStart: rediscovery (a group whose read failed, reopened a minute
// later) keeps writing to the same file: one run is one recording, never truncated.
func TestRecordingWriterOncePerStart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "rec.jsonl")
	ts := newTestScraper(t, "skx", func(c *Config) { c.Recording.Write = file; c.PCIe.Enabled = false })
	broken := true
	ts.fake.readErr = func(cpu int, attrs []perf.Attr) error {
		if broken && attrs[0].Type == skxIMC0 {
			return os.ErrClosed
		}
		return nil
	}
	for range 3 {
		ts.tick(40 * time.Second)
		_, _ = ts.scrape(t.Context())
		broken = false
	}
	require.NoError(t, ts.shutdown(t.Context()))
	rec, err := recording.Open(file)
	require.NoError(t, err)
	assert.Len(t, rec.Samples(), 3, "every scrape of the run in one file")
	trees := 0
	for _, r := range rec.Records {
		if len(r.Tree) > 0 {
			trees++
		}
	}
	assert.Equal(t, 1, trees)
}

// Start fails on a replay it cannot use (missing, of another receiver) and on a recording it
// cannot create, with an error naming the file; the config itself validates.
func TestStartFailsOnBadRecordingFiles(t *testing.T) {
	dir := t.TempDir()
	gpu := filepath.Join(dir, "gpu.jsonl")
	w, err := recording.CreateFor(gpu, "gpu", time.Second)
	require.NoError(t, err)
	require.NoError(t, w.Write(recording.Record{Time: time.Now(), Sample: []byte(`{}`)}))
	require.NoError(t, w.Close())

	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"missing replay", func(c *Config) { c.Recording.Replay = filepath.Join(dir, "none.jsonl") }, "none.jsonl"},
		{"other receiver", func(c *Config) { c.Recording.Replay = gpu }, `of the "gpu" receiver, not cpuuncore`},
		{"uncreatable recording", func(c *Config) { c.Recording.Write = filepath.Join(dir, "no", "such", "dir", "r.jsonl") }, "r.jsonl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			cfg.RootPath, _ = filepath.Abs("testdata/vm")
			tc.edit(cfg)
			require.NoError(t, cfg.Validate())
			r, err := NewFactory().CreateMetrics(t.Context(), receivertest.NewNopSettings(metadata.Type), cfg, new(consumertest.MetricsSink))
			require.NoError(t, err, "creating the receiver opens no file")
			err = r.Start(t.Context(), componenttest.NewNopHost())
			require.ErrorContains(t, err, tc.want)
			require.NoError(t, r.Shutdown(t.Context()))
		})
	}
}

// A recording that cannot be written any more (disk full, file gone) is said once at Warn, and
// the scrapes go on.
func TestRecordingWriteFailureLoggedOnce(t *testing.T) {
	file := filepath.Join(t.TempDir(), "rec.jsonl")
	ts := newTestScraper(t, "skx", func(c *Config) { c.Recording.Write = file; c.PCIe.Enabled = false })
	fail := func(time.Time) error { return os.ErrClosed }
	ts.src.afterScrape = fail
	for range 3 {
		ts.tick(5 * time.Second)
		_, err := ts.scrape(t.Context())
		require.NoError(t, err, "a recording failure costs no metric")
	}
	assert.Len(t, logged(ts, zapcore.WarnLevel, "Cannot write the recording"), 1)
}

// writeReplay writes a recording of one event (uncore_imc_0 type 7 config 4 on CPU 0, in a tree
// holding only that PMU's type) with the given counts, one sample each.
func writeReplay(t *testing.T, counts []uint64) string {
	file := filepath.Join(t.TempDir(), "loop.jsonl")
	w, err := recording.CreateFor(file, "cpuuncore", 5*time.Second)
	require.NoError(t, err)
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	require.NoError(t, w.Write(recording.Record{Time: at, Tree: []recording.Entry{
		{Path: "sys/bus/event_source/devices/uncore_imc_0/type", Data: recording.Text("7\n")},
	}}))
	for i, c := range counts {
		b, err := json.Marshal(recording.PerfSample{Perf: []recording.PerfReading{{CPU: 0, PMU: "uncore_imc_0", Config: 4, Value: c, Enabled: c, Running: c}}})
		require.NoError(t, err)
		require.NoError(t, w.Write(recording.Record{Time: at.Add(time.Duration(i+1) * 5 * time.Second), Sample: b}))
	}
	require.NoError(t, w.Close())
	return file
}

// TestReplayLoopKeepsCounting: a looping replay continues the counters from lap to lap (an open
// perf event never counts backwards), so the replayed traffic repeats instead of stopping; every
// read between two scrapes (the background reader's) returns the same sample.
func TestReplayLoopKeepsCounting(t *testing.T) {
	read := func(loop bool, scrapes int) []uint64 {
		cfg := createDefaultConfig().(*Config)
		cfg.Recording.Replay, cfg.Recording.Loop = writeReplay(t, []uint64{100, 150, 230}), loop
		s, err := openSeam(cfg, liveOpener, time.Now())
		require.NoError(t, err)
		defer func() { require.NoError(t, s.close()) }()
		g, err := s.opener.OpenGroup(0, []perf.Attr{{Type: 7, Config: 4}})
		require.NoError(t, err)
		var got []uint64
		for range scrapes {
			r := perf.Reading{Values: make([]uint64, 1)}
			require.NoError(t, g.Read(&r))
			again := perf.Reading{Values: make([]uint64, 1)}
			require.NoError(t, g.Read(&again))
			require.Equal(t, r, again, "one sample per scrape")
			got = append(got, r.Values[0])
			require.NoError(t, s.afterScrape(time.Now()))
		}
		_, err = s.opener.OpenGroup(0, []perf.Attr{{Type: 7, Config: 5}})
		assert.ErrorIs(t, err, os.ErrNotExist, "an event the recording does not have")
		return got
	}
	// Lap 2 starts one recorded step (50) after lap 1 ended, then repeats lap 1's increments.
	assert.Equal(t, []uint64{100, 150, 230, 280, 330, 410, 460}, read(true, 7))
	assert.Equal(t, []uint64{100, 150, 230, 230, 230}, read(false, 5), "without loop the last reading repeats")
}

// TestReplayStampsRecordedTime: a replay's points carry the times the samples were recorded at
// (internal/recording ReplayClock), so that a rate over a replay is the recorded one however late
// the scrapes run. Five scrapes of the SKX fixture are recorded 5 s apart with 1000 CAS reads
// (64,000 bytes) between them, then replayed by scrapes up to 4 s late (a loaded machine): every
// interval's read rate must be 12,800 B/s exactly.
func TestReplayStampsRecordedTime(t *testing.T) {
	file := filepath.Join(t.TempDir(), "node1-cpuuncore.jsonl")
	live := newTestScraper(t, "skx", func(c *Config) { c.Recording.Write = file; c.PCIe.Enabled = false })
	for range 5 {
		live.fake.add(0, skxIMC0, skxCASRead, 1000)
		live.tick(5 * time.Second)
		_, err := live.scrape(t.Context())
		require.NoError(t, err)
	}
	require.NoError(t, live.shutdown(t.Context()))

	cfg := createDefaultConfig().(*Config)
	cfg.Recording.Replay = file
	cfg.CollectionInterval = 5 * time.Second
	cfg.PCIe.Enabled = false
	s := newScraper(cfg, receivertest.NewNopSettings(metadata.Type), liveOpener)
	start := time.Now()
	scrape := 0
	late := []time.Duration{0, 4 * time.Second, 0, 3 * time.Second, 500 * time.Millisecond}
	s.now = func() time.Time { return start.Add(time.Duration(scrape)*5*time.Second + late[scrape]) }
	require.NoError(t, s.start(t.Context(), nil))
	defer func() { require.NoError(t, s.shutdown(t.Context())) }()
	read := io("cpu_memory", "read", "socket0/imc", "", 0)
	var prevValue int64
	var prevAt time.Time
	for i := range late {
		scrape = i
		md, err := s.scrape(t.Context())
		require.NoError(t, err)
		var at time.Time
		for _, dp := range metrictest.Points(md, "interconnect.io") {
			if v, _ := dp.Attributes().Get("component"); v.Str() == "cpu_memory" {
				at = dp.Timestamp().AsTime()
			}
		}
		p, ok := ioPoints(t, md)[read]
		require.True(t, ok, "scrape %d", i)
		if i > 0 {
			assert.InDelta(t, 12800.0, float64(p.value-prevValue)/at.Sub(prevAt).Seconds(), 1e-9, "rate of interval %d", i)
		}
		prevValue, prevAt = p.value, at
	}
}

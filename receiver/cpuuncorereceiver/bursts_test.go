package cpuuncorereceiver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-iclens/otelcol-iclens/internal/capture"
	"github.com/otelcol-iclens/otelcol-iclens/internal/capture/capturetest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/perf"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver/internal/metadata"
)

// The bursts are the JANOG model's step (../shared/seeds): every 600 ms, 40 ms of host memory
// reads at burstRate (the data of a GPUDirect RDMA that bounces through host memory), then
// nothing; a 1 s average of that is 6.7 GB/s. The fixture is testdata/skx (uncore_snbep.c
// cas_count_read, 64 B a CAS): the reads are counted on uncore_imc_0 of socket 0.
const (
	burstRate   = 100e9 // bytes/s
	burstLen    = 40 * time.Millisecond
	burstStep   = 600 * time.Millisecond
	burstPeriod = 10 * time.Millisecond
)

// casAt is the CAS reads counted by elapsed time e.
func casAt(e time.Duration) uint64 {
	bytes := burstRate * (time.Duration(e/burstStep)*burstLen + min(e%burstStep, burstLen)).Seconds()
	return uint64(bytes / 64)
}

// burstRig is a scraper over testdata/skx (memory only) with the fast sampler on at 10 ms, driven
// by a tick channel of the test's and the test's clock.
type burstRig struct {
	*testScraper
	ticks    chan time.Time
	passDone chan struct{}
	counted  uint64
	start    time.Time
}

func newBurstRig(t *testing.T, edit func(*Config)) *burstRig { return newBurstRigOn(t, nil, edit) }

// newBurstRigOn is newBurstRig started on host (one with a capture extension).
func newBurstRigOn(t *testing.T, host component.Host, edit func(*Config)) *burstRig {
	r := &burstRig{ticks: make(chan time.Time), passDone: make(chan struct{}, 1)}
	r.testScraper = newTestScraperOn(t, host, "skx", func(c *Config) {
		c.PCIe.Enabled = false
		c.CollectionInterval = time.Second
		c.Bursts.Period = burstPeriod
		if edit != nil {
			edit(c)
		}
	}, func(s *uncoreScraper) {
		s.newBurstTicker = func(time.Duration) (<-chan time.Time, func()) { return r.ticks, func() {} }
	})
	r.start = r.clock
	// Set before the first tick, which is what hands it to the sampler's goroutine.
	onPass := r.bursts.onPass
	r.bursts.onPass = func(at time.Time, v map[string]uint64) {
		if onPass != nil {
			onPass(at, v)
		}
		r.passDone <- struct{}{}
	}
	return r
}

// passes moves the counters and the clock through elapsed times from..to, one tick of the sampler
// every burstPeriod, and waits for each pass before the counters move on.
func (r *burstRig) passes(t *testing.T, from, to time.Duration) {
	for e := from; e <= to; e += burstPeriod {
		n := casAt(e)
		r.fake.add(0, skxIMC0, skxCASRead, n-r.counted)
		r.counted = n
		r.clock = r.start.Add(e)
		r.ticks <- r.clock
		select {
		case <-r.passDone:
		case <-time.After(time.Minute):
			t.Fatalf("the sampler did not fold the pass at %v within a minute", e)
		}
	}
}

// steps scrapes the series' baseline, runs the sampler through two JANOG steps (1.2 s of passes)
// and returns the scrape after them.
func (r *burstRig) steps(t *testing.T) pmetric.Metrics {
	t.Helper()
	_, err := r.scrape(t.Context()) // the series' baseline
	require.NoError(t, err)
	r.passes(t, 0, 1200*time.Millisecond)
	r.clock = r.start.Add(1200 * time.Millisecond)
	md, err := r.scrape(t.Context())
	require.NoError(t, err)
	return md
}

func memoryPeak(t *testing.T, md pmetric.Metrics) (float64, bool) {
	t.Helper()
	dp, ok := metrictest.Find(md, "cpuuncore.burst.peak_rate", map[string]any{"component": "cpu_memory", "direction": "read", "device": "socket0/imc"})
	if ok {
		assert.Equal(t, "10ms", dp.Attributes().AsRaw()["burst.window"])
	}
	return dp.DoubleValue(), ok
}

// TestBurstsPeakOfHostMemory: the sampler reads the IMC group every 10 ms and the scrape reports
// the peak of the socket's reads at the bursts' rate, within 5 %, where interconnect.io's 1.2 s of
// bytes average 6.7 GB/s, and unchanged by the sampler.
func TestBurstsPeakOfHostMemory(t *testing.T) {
	r := newBurstRig(t, nil)
	md := r.steps(t)
	peak, ok := memoryPeak(t, md)
	require.True(t, ok, "no cpuuncore.burst.peak_rate for socket0/imc read")
	assert.InEpsilon(t, burstRate, peak, 0.05, "the peak of a 10 ms window inside a burst")
	total := ioPoints(t, md)[io("cpu_memory", "read", "socket0/imc", "", 0)].value
	assert.Equal(t, int64(casAt(1200*time.Millisecond)*64), total, "interconnect.io counts every byte, the sampler's reads changing nothing")
	avg := float64(total) / 1.2
	assert.Less(t, avg, burstRate/10, "the average hides the bursts")
	_, ok = metrictest.Find(md, "cpuuncore.burst.peak_rate", map[string]any{"direction": "write"})
	assert.True(t, ok, "every series the groups feed has its peak (writes at 0 B/s)")

	// An interval in which no window ended (no pass) has no peak point.
	r.clock = r.start.Add(2200 * time.Millisecond)
	md, err := r.scrape(t.Context())
	require.NoError(t, err)
	_, ok = memoryPeak(t, md)
	assert.False(t, ok, "a peak without windows")
}

// TestBurstsOffByDefault: without bursts.period no goroutine samples (no read between scrapes) and
// no peak is reported.
func TestBurstsOffByDefault(t *testing.T) {
	ts := newTestScraper(t, "skx", func(c *Config) { c.PCIe.Enabled = false })
	require.Nil(t, ts.bursts)
	ts.fake.add(0, skxIMC0, skxCASRead, 1000)
	reads := ts.fake.reads
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	_, ok := memoryPeak(t, md)
	assert.False(t, ok)
	assert.Equal(t, reads+len(ts.fake.groups), ts.fake.reads, "one read per group, the scrape's")
}

// TestBurstsRecordThenReplay records the sampler's passes with the scrapes and replays them: the
// fold runs on the recorded sub-interval samples at their recorded times, so the replay reports the
// live peak exactly, with the recorded period as its window, whatever the replaying receiver's
// own bursts.period (unset here).
func TestBurstsRecordThenReplay(t *testing.T) {
	file := filepath.Join(t.TempDir(), "node1-cpuuncore.jsonl")
	r := newBurstRig(t, func(c *Config) { c.Recording.Write = file })
	live := r.steps(t)
	livePeak, ok := memoryPeak(t, live)
	require.True(t, ok)
	require.NoError(t, r.shutdown(t.Context()))

	rec, err := recording.Open(file)
	require.NoError(t, err)
	var s recording.PerfSample
	require.NoError(t, json.Unmarshal(rec.Samples()[1].Sample, &s))
	require.NotNil(t, s.Bursts, "the second sample carries the passes")
	assert.Equal(t, 121, s.Bursts.Len())
	assert.Equal(t, recording.Duration(burstPeriod), s.Bursts.Period)

	cfg := createDefaultConfig().(*Config)
	cfg.Recording.Replay = file
	cfg.CollectionInterval = time.Second
	cfg.PCIe.Enabled = false
	replay := newScraper(cfg, receivertest.NewNopSettings(metadata.Type), liveOpener)
	at := time.Now()
	replay.now = func() time.Time { at = at.Add(time.Second); return at }
	require.NoError(t, replay.start(t.Context(), nil))
	defer func() { require.NoError(t, replay.shutdown(t.Context())) }()
	var md pmetric.Metrics
	for range 2 {
		md, err = replay.scrape(t.Context())
		require.NoError(t, err)
	}
	peak, ok := memoryPeak(t, md)
	require.True(t, ok, "the replay folds the recorded passes")
	assert.Equal(t, livePeak, peak)
}

// TestSharedGroupClosed: a group the scrape closed reads as closed for the sampler (never through
// a descriptor the kernel may have given to another file), and a recording group's sampler reads
// bypass the scrape's sample.
func TestSharedGroupClosed(t *testing.T) {
	fake := newFakeOpener()
	g, err := fake.OpenGroup(0, []perf.Attr{{Type: skxIMC0, Config: skxCASRead}})
	require.NoError(t, err)
	o := &recordingOpener{inner: fake, names: map[uint32]string{skxIMC0: "uncore_imc_0"}}
	sh := share(&recordingGroup{Group: g, o: o, cpu: 0, attrs: []perf.Attr{{Type: skxIMC0, Config: skxCASRead}}})
	r := perf.Reading{Values: make([]uint64, 1)}
	require.NoError(t, sh.readFast(&r))
	assert.Empty(t, o.pending, "the sampler's read is not the scrape's sample")
	require.NoError(t, sh.Read(&r))
	assert.Len(t, o.pending, 1, "the scrape's read is recorded")
	require.NoError(t, sh.Close())
	assert.ErrorIs(t, sh.readFast(&r), os.ErrClosed)
	assert.ErrorIs(t, sh.Read(&r), os.ErrClosed)
	assert.ErrorIs(t, sh.Close(), os.ErrClosed, "closed once")
	assert.Equal(t, 1, fake.closed)
}

// TestBurstsPeriodValidated: bursts.period is 0 (off) or at least 10 ms, and shorter than the
// collection interval.
func TestBurstsPeriodValidated(t *testing.T) {
	for _, c := range []struct {
		period time.Duration
		want   string
	}{
		{-time.Millisecond, "bursts.period: must not be negative, got -1ms"},
		{time.Millisecond, "bursts.period: must be 0 (off) or at least 10ms, got 1ms"},
		{5 * time.Second, "bursts.period: must be shorter than collection_interval (5s), got 5s"},
	} {
		cfg := createDefaultConfig().(*Config)
		cfg.Bursts.Period = c.period
		assert.ErrorContains(t, cfg.Validate(), c.want)
	}
	cfg := createDefaultConfig().(*Config)
	cfg.Bursts.Period = 10 * time.Millisecond
	assert.NoError(t, cfg.Validate())

	// bursts.capture_window (checked only with bursts.capture): not negative, at most a minute; a
	// window below the interval keeps the interval (capture.Window).
	cfg.Bursts.CaptureWindow = -time.Second
	assert.NoError(t, cfg.Validate(), "not checked without bursts.capture")
	cfg.Bursts.Capture = &capturetest.ID
	assert.ErrorContains(t, cfg.Validate(), "bursts.capture_window: must not be negative, got -1s")
	cfg.Bursts.CaptureWindow = 500 * time.Millisecond
	assert.NoError(t, cfg.Validate())
	assert.Equal(t, 5*time.Second, capture.Window(cfg.Bursts.CaptureWindow, cfg.CollectionInterval))
	cfg.Bursts.CaptureWindow = 2 * time.Minute
	assert.ErrorContains(t, cfg.Validate(), "bursts.capture_window: must be at most 1m0s, got 2m0s")
	cfg.Bursts.CaptureWindow = createDefaultConfig().(*Config).Bursts.CaptureWindow
	assert.NoError(t, cfg.Validate(), "the default window, 5s")
}

// BenchmarkBurstPass is one pass of the fast sampler over a two-socket Sapphire Rapids (testdata/spr:
// the IMC and IIO groups of uncore_snbep.c) on the fake counter source, folded: the sampler's own
// cost. A live pass adds one read(2) per group (groups/op), which BenchmarkGroupRead in
// internal/perf measures on this machine's software events (README.md, "Microbursts").
func BenchmarkBurstPass(b *testing.B) {
	ts := newTestScraperWith(b, "spr", func(c *Config) {
		c.CollectionInterval = time.Second
		c.Bursts.Period = burstPeriod
	}, func(s *uncoreScraper) {
		s.newBurstTicker = func(time.Duration) (<-chan time.Time, func()) { return make(chan time.Time), func() {} }
	})
	bs := ts.bursts
	bs.shutdown()
	at := ts.clock
	bs.clock = func() time.Time { at = at.Add(burstPeriod); return at }
	b.ReportAllocs()
	for b.Loop() {
		bs.pass()
	}
	b.ReportMetric(float64(len(bs.groups)), "groups/op")
	b.ReportMetric(float64(len(bs.targets)), "series/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(burstPeriod.Nanoseconds())*100, "%core@10ms")
}

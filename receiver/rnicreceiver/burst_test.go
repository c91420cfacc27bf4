package rnicreceiver

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// The fixture is testdata/synthetic (testfs.SyntheticRDMANode, laid out as
// drivers/infiniband/core/sysfs.c creates a port: counters/port_xmit_data in 4-octet words,
// rate "100 Gb/sec (4X EDR)" on an Ethernet link layer, so 12.5e9 bytes/s) and its bond0 netdev
// (net/core/net-sysfs.c statistics/tx_bytes, plain bytes).
const (
	bondPort   = "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_bond_0/ports/1/"
	bondNetdev = "sys/devices/virtual/net/bond0/statistics/"
	// burstLine is the port's line rate in bytes/s.
	burstLine = 100e9 / 8
)

// manualClock is a clock the test sets; the scrape and the sampler goroutine both read it.
type manualClock struct{ ns atomic.Int64 }

func (c *manualClock) set(t time.Time) { c.ns.Store(t.UnixNano()) }
func (c *manualClock) now() time.Time  { return time.Unix(0, c.ns.Load()).UTC() }
func newManualClock() *manualClock     { c := &manualClock{}; c.set(testEpoch); return c }
func stepWords(e time.Duration) uint64 { return stepBytes(e) / 4 }

// stepBytes is the JANOG step shape: 40 ms at line rate every 600 ms, as bytes moved by e.
func stepBytes(e time.Duration) uint64 {
	const burst, period = 40 * time.Millisecond, 600 * time.Millisecond
	return uint64(burstLine * (time.Duration(e/period)*burst + min(e%period, burst)).Seconds())
}

// burstRig is a scraper over the synthetic fixture with the fast sampler on at 10 ms, driven by
// a ticker channel of the test's and the test's clock; passDone says when a pass has been folded.
type burstRig struct {
	s        *rnicScraper
	logs     *observer.ObservedLogs
	root     string
	clock    *manualClock
	ticks    chan time.Time
	passDone chan struct{}
}

func newBurstRig(t *testing.T, tweak func(*Config)) *burstRig {
	return newBurstRigOn(t, componenttest.NewNopHost(), tweak)
}

// newBurstRigOn is newBurstRig started on host.
func newBurstRigOn(t *testing.T, host component.Host, tweak func(*Config)) *burstRig {
	r := &burstRig{root: fixtureCopy(t, filepath.Join("testdata", "synthetic")), clock: newManualClock(),
		ticks: make(chan time.Time), passDone: make(chan struct{}, 1)}
	r.s, r.logs = newTestScraperOn(t, host, r.root, func(cfg *Config) {
		cfg.Include.Devices = []string{"mlx5_bond_0"}
		cfg.CollectionInterval = time.Second
		cfg.Bursts.Period = 10 * time.Millisecond
		cfg.Bursts.Shares = []float64{0.5, 0.9}
		if tweak != nil {
			tweak(cfg)
		}
	}, func(s *rnicScraper) {
		s.clock = r.clock.now
		s.newBurstTicker = func(time.Duration) (<-chan time.Time, func()) { return r.ticks, func() {} }
	})
	r.setCounters(t, 0)
	_, err := r.s.scrape(context.Background()) // discovers the port: the sampler's targets
	require.NoError(t, err)
	onPass := r.s.bursts.onPass
	r.s.bursts.onPass = func(at time.Time, v map[string]uint64) {
		if onPass != nil {
			onPass(at, v)
		}
		r.passDone <- struct{}{}
	}
	return r
}

// setCounters writes the step shape's counters at elapsed time e: the port transmits in bursts,
// the netdev carries 1 MB/s of IP traffic.
func (r *burstRig) setCounters(t *testing.T, e time.Duration) {
	testfs.SetUint(t, r.root, bondPort+"counters/port_xmit_data", 1_000_000+stepWords(e))
	testfs.SetUint(t, r.root, bondNetdev+"tx_bytes", 5_000+uint64(1e6*e.Seconds()))
}

// samplePasses runs the sampler through elapsed times from..to every 10 ms, one tick each, waiting
// for each pass to be folded before the counters move on.
func (r *burstRig) samplePasses(t *testing.T, from, to time.Duration) {
	for e := from; e <= to; e += 10 * time.Millisecond {
		r.setCounters(t, e)
		r.clock.set(testEpoch.Add(e))
		r.ticks <- testEpoch.Add(e)
		select {
		case <-r.passDone:
		case <-time.After(time.Minute):
			t.Fatalf("the sampler did not fold the pass at %v within a minute", e)
		}
	}
}

func peakOf(t *testing.T, md pmetric.Metrics, component, direction, device string) float64 {
	t.Helper()
	dp, ok := metrictest.Find(md, "rnic.burst.peak_rate", map[string]any{"component": component, "direction": direction, "device": device})
	require.True(t, ok, "no rnic.burst.peak_rate for %s %s %s", component, direction, device)
	assert.Equal(t, "10ms", dp.Attributes().AsRaw()["burst.window"])
	return dp.DoubleValue()
}

func aboveOf(t *testing.T, md pmetric.Metrics, device string, share float64) float64 {
	t.Helper()
	dp, ok := metrictest.Find(md, "rnic.burst.time_above", map[string]any{"component": "rnic", "direction": "transmit",
		"device": device, "burst.share": share})
	require.True(t, ok, "no rnic.burst.time_above for %s at %v", device, share)
	return dp.DoubleValue()
}

func utilizationOf(t *testing.T, md pmetric.Metrics, device string) pmetric.HistogramDataPoint {
	t.Helper()
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				m := ms.At(k)
				if m.Name() != metricBurstUtilization {
					continue
				}
				dps := m.Histogram().DataPoints()
				for l := range dps.Len() {
					a := dps.At(l).Attributes().AsRaw()
					if a["device"] == device && a["direction"] == "transmit" && a["component"] == "rnic" {
						return dps.At(l)
					}
				}
			}
		}
	}
	t.Fatalf("no %s for %s", metricBurstUtilization, device)
	return pmetric.HistogramDataPoint{}
}

// TestBurstSamplerFoldsSubIntervalSamples samples the JANOG step shape (40 ms line-rate bursts
// every 600 ms) at 10 ms between two scrapes: the scrape reports the peak at line rate, 80 ms above
// 50 % and 90 % (two bursts), the utilization of every window, while interconnect.io still counts
// every byte; the bytes are port_xmit_data x 4.
func TestBurstSamplerFoldsSubIntervalSamples(t *testing.T) {
	r := newBurstRig(t, nil)
	r.samplePasses(t, 0, 1200*time.Millisecond)
	r.clock.set(testEpoch.Add(1200 * time.Millisecond))
	md, err := r.s.scrape(context.Background())
	require.NoError(t, err)

	assert.InDelta(t, burstLine, peakOf(t, md, "rnic", "transmit", "mlx5_bond_0/1"), burstLine*1e-6)
	assert.InDelta(t, 1e6, peakOf(t, md, "netdev", "transmit", "bond0"), 1e6*1e-3)
	assert.InDelta(t, 0.08, aboveOf(t, md, "mlx5_bond_0/1", 0.5), 1e-9)
	assert.InDelta(t, 0.08, aboveOf(t, md, "mlx5_bond_0/1", 0.9), 1e-9)
	h := utilizationOf(t, md, "mlx5_bond_0/1")
	assert.Equal(t, uint64(120), h.Count(), "one count per 10 ms window")
	assert.Equal(t, []uint64{112, 0, 0, 0, 0, 8, 0}, h.BucketCounts().AsRaw())
	assert.Equal(t, testEpoch.UnixNano(), int64(h.StartTimestamp()), "cumulative since the first sample")
	assert.Equal(t, int64(stepBytes(1200*time.Millisecond)/4*4), value(t, md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit")))

	// The next interval: no windows, no peak; the cumulative series stay.
	md, err = r.s.scrape(context.Background())
	require.NoError(t, err)
	_, ok := metrictest.Find(md, "rnic.burst.peak_rate", map[string]any{"device": "mlx5_bond_0/1"})
	assert.False(t, ok, "no window ended in the interval: no peak")
	assert.InDelta(t, 0.08, aboveOf(t, md, "mlx5_bond_0/1", 0.9), 1e-9)
}

// TestBurstSamplerOffByDefault: without bursts.period nothing reads fast and no burst series exist.
func TestBurstSamplerOffByDefault(t *testing.T) {
	root := fixtureCopy(t, filepath.Join("testdata", "synthetic"))
	s, _ := newTestScraper(t, root, func(cfg *Config) { cfg.Include.Devices = []string{"mlx5_bond_0"} })
	require.Nil(t, s.bursts)
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	_, ok := metrictest.Find(md, "rnic.burst.peak_rate", nil)
	assert.False(t, ok)
}

// TestBurstSamplerNeverDelaysScrape: a pass that does not return (a read stuck behind firmware)
// holds only the sampler's goroutine; the scrape goes on and reports what was folded before.
func TestBurstSamplerNeverDelaysScrape(t *testing.T) {
	r := newBurstRig(t, nil)
	r.samplePasses(t, 0, 20*time.Millisecond)
	release := make(chan struct{})
	defer close(release)
	r.s.bursts.onPass = func(time.Time, map[string]uint64) { <-release }
	r.ticks <- testEpoch // the pass now blocks until release
	done := make(chan error, 1)
	go func() {
		_, err := r.s.scrape(context.Background())
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("the scrape waited a minute for a stuck fast sampler")
	}
}

// TestBurstSamplerDropsTicks: ticks that come while a pass is under way are dropped, as
// time.Ticker drops them (its channel holds one tick): the sampler never works off a backlog.
func TestBurstSamplerDropsTicks(t *testing.T) {
	r := newBurstRig(t, nil)
	ticks := make(chan time.Time, 1) // time.Ticker's channel
	release := make(chan struct{})
	passes := make(chan struct{}, 100)
	b := r.s.bursts
	b.shutdown() // the rig's sampler; this test runs one on a ticker shaped like time.Ticker's
	b.loop.NewTicker = func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }
	b.onPass = func(time.Time, map[string]uint64) { passes <- struct{}{}; <-release }
	b.start(r.root)
	ticks <- testEpoch
	<-passes // the first pass is under way and blocked
	for range 50 {
		select {
		case ticks <- testEpoch: // as time.Ticker's sendTime: a tick only where the channel has room
		default:
		}
	}
	close(release)
	// The one tick the channel held gives one more pass; nothing else is queued.
	select {
	case <-passes:
	case <-time.After(time.Minute):
		t.Fatal("the held tick gave no pass within a minute")
	}
	b.shutdown()
	assert.Empty(t, passes, "passes after the dropped ticks")
}

// TestBurstRecordThenReplay records the fast sampler's passes with the scrapes and replays the
// recording on a clock of its own (stepClock: one second a scrape, whatever the recorded times):
// the fold runs on the recorded sub-interval samples at their recorded times, so the replay reports
// exactly the live peak, time above and histogram, and the recorded period names the window.
func TestBurstRecordThenReplay(t *testing.T) {
	file := filepath.Join(t.TempDir(), "node1-rnic.jsonl")
	r := newBurstRig(t, func(cfg *Config) { cfg.Recording.Write = file })
	r.samplePasses(t, 0, 1200*time.Millisecond)
	r.clock.set(testEpoch.Add(1200 * time.Millisecond))
	live, err := r.s.scrape(context.Background())
	require.NoError(t, err)
	require.NoError(t, r.s.shutdown(context.Background()))

	replay, _ := newTestScraperWith(t, t.TempDir(), func(cfg *Config) {
		cfg.Recording.Replay = file
		cfg.CollectionInterval = time.Second
		cfg.Bursts.Shares = []float64{0.5, 0.9}
	}, func(s *rnicScraper) { s.clock = stepClock() })
	var md pmetric.Metrics
	for range 2 { // the discovery's scrape, then the one whose record carries the passes
		md, err = replay.scrape(context.Background())
		require.NoError(t, err)
	}
	assertSameBursts(t, live, md)
	assert.InDelta(t, 0.08, aboveOf(t, md, "mlx5_bond_0/1", 0.9), 1e-9)
}

// assertSameBursts checks that got reports the synthetic fixture's bursts as want does: the peaks
// of the port and its netdev, the time above each of the rig's shares and the histogram.
func assertSameBursts(t *testing.T, want, got pmetric.Metrics) {
	t.Helper()
	assert.Equal(t, peakOf(t, want, "rnic", "transmit", "mlx5_bond_0/1"), peakOf(t, got, "rnic", "transmit", "mlx5_bond_0/1"))
	assert.Equal(t, peakOf(t, want, "netdev", "transmit", "bond0"), peakOf(t, got, "netdev", "transmit", "bond0"))
	for _, share := range []float64{0.5, 0.9} {
		assert.Equal(t, aboveOf(t, want, "mlx5_bond_0/1", share), aboveOf(t, got, "mlx5_bond_0/1", share))
	}
	assert.Equal(t, utilizationOf(t, want, "mlx5_bond_0/1").BucketCounts().AsRaw(), utilizationOf(t, got, "mlx5_bond_0/1").BucketCounts().AsRaw())
}

// TestBurstReplayWithoutSubSamples: a recording made without the fast sampler (every recording
// before it existed) replays as before, with no burst series.
func TestBurstReplayWithoutSubSamples(t *testing.T) {
	root := fixtureCopy(t, filepath.Join("testdata", "synthetic"))
	file := filepath.Join(t.TempDir(), "node1-rnic.jsonl")
	live, _ := newTestScraper(t, root, func(cfg *Config) {
		cfg.Include.Devices = []string{"mlx5_bond_0"}
		cfg.Recording.Write = file
	})
	for range 2 {
		_, err := live.scrape(context.Background())
		require.NoError(t, err)
	}
	require.NoError(t, live.shutdown(context.Background()))
	replay, _ := newTestScraperWith(t, t.TempDir(), func(cfg *Config) { cfg.Recording.Replay = file }, func(s *rnicScraper) { s.clock = stepClock() })
	for range 2 {
		md, err := replay.scrape(context.Background())
		require.NoError(t, err)
		value(t, md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit"))
		_, ok := metrictest.Find(md, "rnic.burst.peak_rate", nil)
		assert.False(t, ok)
	}
}

// TestBurstSamplerOnItsOwnTicks runs the sampler on its real ticks (burst.Loop's sleepTicks on Linux): passes
// come and are folded (a peak appears; the counters do not move, so it is 0 B/s), and shutdown
// stops it. It waits for passes, it does not time them.
func TestBurstSamplerOnItsOwnTicks(t *testing.T) {
	root := fixtureCopy(t, filepath.Join("testdata", "synthetic"))
	s, _ := newTestScraper(t, root, func(cfg *Config) {
		cfg.Include.Devices = []string{"mlx5_bond_0"}
		cfg.CollectionInterval = time.Second
		cfg.Bursts.Period = 10 * time.Millisecond
	})
	deadline := time.Now().Add(time.Minute)
	for {
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		if dp, ok := metrictest.Find(md, "rnic.burst.peak_rate", map[string]any{"device": "mlx5_bond_0/1", "direction": "transmit"}); ok {
			assert.Zero(t, dp.DoubleValue())
			return
		}
		require.True(t, time.Now().Before(deadline), "no pass of the fast sampler was folded within a minute")
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBurstSamplerQuietWithoutPorts: on a node without RDMA ports the sampler takes no tick (it
// waits for a discovery to give it counters), so a node without the hardware does not wake a
// hundred times a second for nothing; once ports appear it samples them.
func TestBurstSamplerQuietWithoutPorts(t *testing.T) {
	root := t.TempDir()
	ticks := make(chan time.Time, 1)
	s, _ := newTestScraperWith(t, root, func(cfg *Config) {
		cfg.Include.Devices = []string{"mlx5_bond_0"}
		cfg.CollectionInterval = time.Second
		cfg.Bursts.Period = 10 * time.Millisecond
	}, func(s *rnicScraper) {
		s.newBurstTicker = func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }
	})
	_, err := s.scrape(context.Background())
	require.NoError(t, err)
	ticks <- testEpoch
	time.Sleep(100 * time.Millisecond) // long enough for a goroutine that waited on ticks to take it
	assert.Len(t, ticks, 1, "the sampler of a node without ports took a tick")

	// The ports appear: the next discovery hands them over and the held tick gives a pass.
	testfs.CopyTree(t, filepath.Join("testdata", "synthetic"), root)
	deadline := time.Now().Add(time.Minute)
	for len(ticks) > 0 {
		_, err := s.scrape(context.Background())
		require.NoError(t, err)
		require.True(t, time.Now().Before(deadline), "the sampler took no tick within a minute of the ports appearing")
		time.Sleep(10 * time.Millisecond)
	}
}

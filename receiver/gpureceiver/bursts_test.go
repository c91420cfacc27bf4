package gpureceiver

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-iclens/otelcol-iclens/internal/burst"
	"github.com/otelcol-iclens/otelcol-iclens/internal/capture/capturetest"
)

// The fast sampler's tests without NVML (bursts_nvml_test.go has those on go-nvml's mock, and the
// fake libnvidia-ml.so.1): its configuration, the sources it does not run with, and the unwrapping
// of a 32-bit counter.

// TestBurstsPeriodValidated: bursts.period is 0 (off, the default) or at least 10 ms, and shorter
// than the collection interval.
func TestBurstsPeriodValidated(t *testing.T) {
	for _, c := range []struct {
		period time.Duration
		want   string
	}{
		{-time.Millisecond, "bursts.period: must not be negative, got -1ms"},
		{time.Millisecond, "bursts.period: must be 0 (off) or at least 10ms, got 1ms"},
		{10 * time.Second, "bursts.period: must be shorter than collection_interval (10s), got 10s"},
	} {
		cfg := createDefaultConfig().(*Config)
		cfg.Bursts.Period = c.period
		assert.ErrorContains(t, cfg.Validate(), c.want)
	}
	cfg := createDefaultConfig().(*Config)
	assert.Zero(t, cfg.Bursts.Period, "off by default")
	cfg.Bursts.Period = 10 * time.Millisecond
	assert.NoError(t, cfg.Validate())

	// bursts.capture_window (checked only with bursts.capture): not negative, at most a minute.
	cfg.Bursts.CaptureWindow = -time.Second
	assert.NoError(t, cfg.Validate(), "not checked without bursts.capture")
	cfg.Bursts.Capture = &capturetest.ID
	assert.ErrorContains(t, cfg.Validate(), "bursts.capture_window: must not be negative, got -1s")
	cfg.Bursts.CaptureWindow = 2 * time.Minute
	assert.ErrorContains(t, cfg.Validate(), "bursts.capture_window: must be at most 1m0s, got 2m0s")
	// The 5 s default beside the 10 s default interval: accepted, and the ring keeps the interval.
	cfg.Bursts.CaptureWindow = createDefaultConfig().(*Config).Bursts.CaptureWindow
	assert.NoError(t, cfg.Validate())
	assert.Equal(t, 10*time.Second, newCaptureRing(cfg).Window())
}

// burstTick gives a scraper's sampler a tick channel of the test's, holding one tick: a sampler
// that samples takes it, one that does not leaves it there.
func burstTick(s *gpuScraper) chan time.Time {
	ticks := make(chan time.Time, 1)
	ticks <- time.Unix(1_800_000_000, 0)
	s.newBurstTicker = func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }
	return ticks
}

// assertBurstsNotRun: the sampler has nothing to read (it parks without taking a tick), no peak is
// reported, and why was said once, at info level, however often the source was rediscovered.
func assertBurstsNotRun(t *testing.T, s *gpuScraper, logs *observer.ObservedLogs, ticks chan time.Time, msg string) {
	t.Helper()
	require.NotNil(t, s.bursts, "bursts.period set: the sampler exists")
	assert.True(t, s.bursts.idle(), "no reader: the loop parks")
	said := logs.FilterMessage(msg).All()
	require.Len(t, said, 1, "said once")
	assert.Equal(t, zap.InfoLevel, said[0].Level)
	assert.Equal(t, 10*time.Millisecond, said[0].ContextMap()["bursts.period"])
	assert.Len(t, ticks, 1, "the tick was never taken: nothing sampled")
}

// TestBurstsNotRunWithDCGM: DCGM's PCIe fields are profiling fields sampled no faster than every
// 100 ms, and rates: the sampler needs NVML's counters and does not run, said once across
// rediscoveries and a reconnection.
func TestBurstsNotRunWithDCGM(t *testing.T) {
	f := newFakeDCGM(2)
	s, logs, clock := newTestScraper(t, f, func(c *Config) {
		c.CollectionInterval = time.Second
		c.Bursts.Period = 10 * time.Millisecond
	})
	ticks := burstTick(s)
	ctx := context.Background()
	require.NoError(t, s.start(ctx, nil))
	defer func() { require.NoError(t, s.shutdown(ctx)) }()
	require.Equal(t, "dcgm", s.src.kind())
	for range 3 { // two rediscoveries (retry_interval 1m)
		clock.t = clock.t.Add(time.Minute)
		m := scrapeOnce(t, s)
		assert.Empty(t, points(m, "gpu.burst.peak_rate"))
	}
	f.historyErr = &dcgmError{op: "reading samples", code: dcgmStConnectionNotValid, msg: "lost"}
	clock.t = clock.t.Add(time.Second)
	_, err := s.scrape(ctx)
	require.Error(t, err)
	f.historyErr = nil
	clock.t = clock.t.Add(time.Second)
	scrapeOnce(t, s)
	require.Equal(t, 2, f.connects, "reconnected")
	assertBurstsNotRun(t, s, logs, ticks, msgBurstsDCGM)
}

// TestBurstsNotRunOnAMD: amdgpu's gpu_metrics has no cumulative PCIe byte counter: no sampler,
// said once.
func TestBurstsNotRunOnAMD(t *testing.T) {
	s, logs, clock := newAMDScraper(t, amdNode(t, 1000, 7), func(c *Config) {
		c.Source = sourceAMDGPU
		c.CollectionInterval = time.Second
		c.Bursts.Period = 10 * time.Millisecond
	})
	ticks := burstTick(s)
	ctx := context.Background()
	require.NoError(t, s.start(ctx, nil))
	defer func() { require.NoError(t, s.shutdown(ctx)) }()
	require.Equal(t, "amdgpu", s.src.kind())
	for range 3 {
		clock.t = clock.t.Add(time.Minute)
		m := scrapeOnce(t, s)
		assert.Empty(t, points(m, "gpu.burst.peak_rate"))
	}
	assertBurstsNotRun(t, s, logs, ticks, msgBurstsAMD)
}

// TestBurstTargetUnwraps32Bits: a counter of 32-bit value type ("Value can be wrapped", nvml.h)
// goes on across 2^32 between two passes: the window across the wrap is measured, not lost as a
// reset; a 64-bit counter that goes back is a reset, which loses that window. A reading without the
// library's timestamp is timed by the pass.
func TestBurstTargetUnwraps32Bits(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	us := func(d time.Duration) int64 { return t0.Add(d).UnixMicro() }
	wrap := &burstTarget{fold: burst.New(0, nil)}
	wrap.add(t0, burstReading{ok: true, raw: math.MaxUint32 - 999, tsUs: us(0), bits: 32})
	wrap.add(t0, burstReading{ok: true, raw: 1000, tsUs: us(10 * time.Millisecond), bits: 32})
	wrap.add(t0, burstReading{ok: false, raw: 0, tsUs: us(15 * time.Millisecond)}) // a failed read: nothing
	wrap.add(t0.Add(20*time.Millisecond), burstReading{ok: true, raw: 1500, bits: 32})
	iv := wrap.fold.Take()
	assert.Equal(t, 2, iv.Windows, "the window across 2^32 counts")
	assert.InDelta(t, 2000/0.01, iv.Peak, 1e-6, "2000 bytes in the 10 ms across the wrap")

	reset := &burstTarget{fold: burst.New(0, nil)}
	reset.add(t0, burstReading{ok: true, raw: 1 << 40, tsUs: us(0)})
	reset.add(t0, burstReading{ok: true, raw: 1000, tsUs: us(10 * time.Millisecond)})
	reset.add(t0, burstReading{ok: true, raw: 2000, tsUs: us(20 * time.Millisecond)})
	iv = reset.fold.Take()
	assert.Equal(t, 1, iv.Windows, "a 64-bit counter that goes back was reset: that window is lost")
	assert.InDelta(t, 1000/0.01, iv.Peak, 1e-6)
}

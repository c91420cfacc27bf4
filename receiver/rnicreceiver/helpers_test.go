package rnicreceiver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver/internal/metadata"
)

// The helpers every test file of the package shares: a scraper over a fixture tree, an injected
// clock, and assertions on top of internal/metrictest.

// newTestScraper builds a scraper over root (a directory holding sys/) with the given config
// tweaks, a fake ethtool, and an observed logger.
func newTestScraper(t testing.TB, root string, tweak func(*Config)) (*rnicScraper, *observer.ObservedLogs) {
	t.Helper()
	return newTestScraperWith(t, root, tweak, nil)
}

// newTestScraperWith is newTestScraper with a hook run before start (to inject a clock or an
// ethtool source).
func newTestScraperWith(t testing.TB, root string, tweak func(*Config), before func(*rnicScraper)) (*rnicScraper, *observer.ObservedLogs) {
	t.Helper()
	return newTestScraperOn(t, componenttest.NewNopHost(), root, tweak, before)
}

// newTestScraperOn is newTestScraperWith started on host (one with the extensions a test names).
func newTestScraperOn(t testing.TB, host component.Host, root string, tweak func(*Config), before func(*rnicScraper)) (*rnicScraper, *observer.ObservedLogs) {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	cfg.RootPath = root
	cfg.Ethtool.Enabled = false
	if tweak != nil {
		tweak(cfg)
	}
	core, logs := observer.New(zapcore.DebugLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	s := newScraper(cfg, set)
	if before != nil {
		before(s)
	}
	require.NoError(t, s.start(context.Background(), host))
	t.Cleanup(func() { require.NoError(t, s.shutdown(context.Background())) })
	return s, logs
}

// testEpoch is where the tests' injected clocks start.
var testEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// stepClock returns a clock that starts at testEpoch and moves on by one second each time it is
// read: the receiver reads it once at start and once per scrape, so the timestamps of golden
// files are fixed.
func stepClock() func() time.Time {
	n := 0
	return func() time.Time {
		t := testEpoch.Add(time.Duration(n) * time.Second)
		n++
		return t
	}
}

// point is metrictest.Find; topology_test.go still calls it by this name.
func point(md pmetric.Metrics, name string, want map[string]any) (pmetric.NumberDataPoint, bool) {
	return metrictest.Find(md, name, want)
}

func value(t *testing.T, md pmetric.Metrics, name string, want map[string]any) int64 {
	t.Helper()
	dp, ok := metrictest.Find(md, name, want)
	require.True(t, ok, "no %s point with %v", name, want)
	return dp.IntValue()
}

func absent(t *testing.T, md pmetric.Metrics, name string, want map[string]any) {
	t.Helper()
	_, ok := metrictest.Find(md, name, want)
	assert.False(t, ok, "unexpected %s point with %v", name, want)
}

func rnicIO(device, direction string) map[string]any {
	return map[string]any{"component": "rnic", "device": device, "direction": direction}
}

// fixtureCopy copies the fixture node at dir to a temporary directory, whose counters a test can
// grow without touching testdata.
func fixtureCopy(t *testing.T, dir string) string {
	t.Helper()
	root := t.TempDir()
	testfs.CopyTree(t, dir, root)
	return root
}

// scrapeGrown grows every counter of the tree at root by its own value (testfs.GrowCounters)
// and scrapes s again, with the slow counters due. s has scraped root before: under the
// start-time rule (metadata/start-time.md) that scrape was every series' baseline, with points of
// 0, so this scrape's points are the fixture's own values, counted since the baseline. Tests check
// the fixture's scales and units (x4 for PMA data counters) on that known delta.
func scrapeGrown(t *testing.T, s *rnicScraper, root string) (pmetric.Metrics, error) {
	t.Helper()
	testfs.GrowCounters(t, root)
	s.slowAt = time.Time{}
	return s.scrape(context.Background())
}

func mustAttr(t *testing.T, md pmetric.Metrics, metric, device, attr string) any {
	t.Helper()
	dp, ok := metrictest.Find(md, metric, map[string]any{"device": device})
	require.True(t, ok, "no %s for %s", metric, device)
	return dp.Attributes().AsRaw()[attr]
}

// scrapeWithin scrapes on a goroutine of its own and fails the test with msg where the scrape has
// not returned within d.
func scrapeWithin(t *testing.T, s *rnicScraper, d time.Duration, msg string) (pmetric.Metrics, error) {
	t.Helper()
	type result struct {
		md  pmetric.Metrics
		err error
	}
	done := make(chan result, 1)
	go func() {
		md, err := s.scrape(context.Background())
		done <- result{md, err}
	}()
	select {
	case r := <-done:
		return r.md, r.err
	case <-time.After(d):
		t.Fatalf("%s (no return within %v)", msg, d)
		return pmetric.Metrics{}, nil
	}
}

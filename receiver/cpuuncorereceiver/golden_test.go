package cpuuncorereceiver

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/perf"
)

var update = flag.Bool("update", false, "rewrite testdata/expected_metrics")

// fixtures are the kernel-shaped trees under testdata (each with sys/ and proc/; see
// testdata/README.md for the kernel and CPU each follows).
func fixtures(t *testing.T) []string {
	dirs, err := filepath.Glob(filepath.Join("testdata", "*", "sys"))
	require.NoError(t, err)
	var out []string
	for _, d := range dirs {
		out = append(out, filepath.Base(filepath.Dir(d)))
	}
	require.NotEmpty(t, out)
	return out
}

// countEverything makes every open counter of the fake count a known amount: the n-th event of a
// group counts n×1000 (n from 1), so that every series of the golden file has a value derived
// from its events' bytes per count.
func countEverything(f *fakeOpener) {
	for _, g := range f.groups {
		if g.closed {
			continue
		}
		for i, a := range g.attrs {
			f.counts[fakeKey{g.cpu, a}] += uint64(1000 * (i + 1))
		}
	}
}

// TestGoldenFixtures scrapes every fixture twice (counts in between, bytes_per_count enabled, the
// clock injected) and compares the second scrape with testdata/expected_metrics/<fixture>.yaml,
// start times included: counters start when they were opened, gauges carry the receiver's start.
// `go test -run TestGoldenFixtures -update` rewrites the files.
func TestGoldenFixtures(t *testing.T) {
	for _, fixture := range fixtures(t) {
		t.Run(fixture, func(t *testing.T) {
			ts := newTestScraper(t, fixture, withScales)
			for range 2 {
				countEverything(ts.fake)
				ts.tick(5 * time.Second)
				_, err := ts.scrape(t.Context())
				require.NoError(t, err)
			}
			countEverything(ts.fake)
			ts.tick(5 * time.Second)
			md, err := ts.scrape(t.Context())
			require.NoError(t, err)

			expected := filepath.Join("testdata", "expected_metrics", fixture+".yaml")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(expected), 0o755))
				require.NoError(t, golden.WriteMetrics(t, expected, md, golden.SkipMetricTimestampNormalization()))
			}
			want, err := golden.ReadMetrics(expected)
			require.NoError(t, err, "run go test -run TestGoldenFixtures -update")
			require.NoError(t, pmetrictest.CompareMetrics(want, md,
				pmetrictest.IgnoreMetricsOrder(), pmetrictest.IgnoreMetricDataPointsOrder()))
		})
	}
}

// TestGaugesCarryReceiverStart: a gauge has no series of its own, so it carries the moment the
// receiver started; it must not inherit the start of whatever counter the builder recorded before
// it (on main, cpuuncore.pcie.device and cpuuncore.event.bytes_per_count carried the start of the
// last interconnect.io series recorded, and the first running_ratio the builder's creation time).
// Here the last series recorded (socket1/imc5 write: cpu_memory sorts after cpu_pcie) starts late:
// its PMU appears after start and is found by the rediscovery that a group failing to open causes.
func TestGaugesCarryReceiverStart(t *testing.T) {
	root := copyFixture(t, "skx")
	pmu := filepath.Join(root, "sys", "bus", "event_source", "devices", "uncore_imc_5")
	hidden := filepath.Join(root, "uncore_imc_5")
	require.NoError(t, os.Rename(pmu, hidden))
	ts := newTestScraper(t, "skx", func(c *Config) {
		c.RootPath = root
		c.Memory.Granularity = GranularityController
		c.PCIe.Granularity = GranularityPort
		withScales(c)
	})
	started := pcommon.NewTimestampFromTime(ts.clock)
	// Discover again with one IIO group refused, so that the receiver keeps looking.
	require.NoError(t, ts.shutdown(t.Context()))
	ts.plan = &plan{}
	refused := true
	ts.fake.openErr = func(cpu int, attrs []perf.Attr) error {
		if refused && cpu == 0 && attrs[0].Type == skxFree0 {
			return os.ErrPermission
		}
		return nil
	}
	ts.discover(ts.clock)

	ts.tick(5 * time.Second)
	_, _ = ts.scrape(t.Context()) // the refused group fails (TestReadFailureCostsOnlyItsSeries)
	refused = false
	require.NoError(t, os.Rename(hidden, pmu))
	ts.tick(time.Minute)
	_, _ = ts.scrape(t.Context()) // rediscovers: the group opens now
	reopened := pcommon.NewTimestampFromTime(ts.clock)
	for range 2 {
		countEverything(ts.fake)
		ts.tick(5 * time.Second)
		md, err := ts.scrape(t.Context())
		require.NoError(t, err)

		dp, ok := metrictest.Find(md, "interconnect.io", map[string]any{"device": "socket1/imc5", "direction": "write"})
		require.True(t, ok)
		assert.Equal(t, reopened, dp.StartTimestamp(), "the late series starts when its counters opened")
		for _, name := range []string{"cpuuncore.pcie.device", "cpuuncore.event.bytes_per_count", "cpuuncore.counter.running_ratio"} {
			points := metrictest.Points(md, name)
			require.NotEmpty(t, points, name)
			for _, p := range points {
				require.Equal(t, started, p.StartTimestamp(), "%s %v: the receiver's start", name, p.Attributes().AsRaw())
			}
		}
		assertGaugesOnly(t, md)
	}
}

// assertGaugesOnly checks that the three gauge metrics are gauges (a sum would need a series start).
func assertGaugesOnly(t *testing.T, md pmetric.Metrics) {
	for _, name := range []string{"cpuuncore.pcie.device", "cpuuncore.event.bytes_per_count", "cpuuncore.counter.running_ratio"} {
		for _, m := range metrictest.Metrics(md, name) {
			assert.Equal(t, pmetric.MetricTypeGauge, m.Type(), name)
		}
	}
}

package gpureceiver

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// TestAMDPCIeRate: the average of two readings is the accumulator's growth over the cycles'
// (amdgpu_pcie.go), across a wrap of the 32-bit accumulation_counter too; the same cycle count
// (the driver's cached table) keeps the baseline; accumulators that went back (a GPU reset)
// restart it quietly; an average no PCIe link carries, or growth without cycles, restarts it with
// an error.
func TestAMDPCIeRate(t *testing.T) {
	r := func(acc, cycles uint64) amdPCIeReading { return amdPCIeReading{acc: acc, cycles: cycles, bits: 32} }
	for name, c := range map[string]struct {
		prev, cur amdPCIeReading
		rate      float64
		step      amdPCIeStep
		err       string
	}{
		"rated":   {r(1000, 100), r(1000+50*24, 150), 24e9, amdPCIeRated, ""},
		"idle":    {r(1000, 100), r(1000, 600), 0, amdPCIeRated, ""},
		"wrapped": {r(1000, math.MaxUint32-9), r(1000+20*3, 10), 3e9, amdPCIeRated, ""},
		"same":    {r(1000, 100), r(1000, 100), 0, amdPCIeSame, ""},
		"reset":   {r(90000, 5000), r(120, 10), 0, amdPCIeRestart, ""},
		"too fast": {r(0, 100), r(300*1000, 1100), 0, amdPCIeRestart,
			"pcie_bandwidth_acc grew by 300000 over 1000 accumulation cycles, an average of 300 GB/s, more than a PCIe link carries"},
		"no cycles": {r(0, 100), r(5, 100), 0, amdPCIeRestart, "pcie_bandwidth_acc grew by 5 while accumulation_counter stayed at 100"},
	} {
		rate, step, err := amdPCIeRate(c.prev, c.cur)
		assert.Equal(t, c.step, step, name)
		assert.InDelta(t, c.rate, rate, 1, name)
		if c.err == "" {
			assert.NoError(t, err, name)
		} else {
			assert.ErrorContains(t, err, c.err, name)
		}
	}
	// A 64-bit counter (an attribute-encoded 1.9 table may declare one) that goes back is a reset.
	_, step, _ := amdPCIeRate(amdPCIeReading{acc: 5, cycles: 9, bits: 64}, amdPCIeReading{acc: 6, cycles: 2, bits: 64})
	assert.Equal(t, amdPCIeRestart, step)
}

// TestAMDGPUPCIeBytes (#25 N11): an MI300X's PCIe bytes, served as interconnect.io gpu_pcie with
// direction=both, are the average GB/s of each span between two tables times the span, summed
// into one cumulative series: 24 GB/s for 10 s, then a scrape that finds the driver's table
// unchanged (nothing served, nothing lost: the next rate spans both scrapes), then 20 s at
// 24 GB/s, then a GPU reset that clears the accumulators (the series goes on from its total), and
// a table that claims 300 GB/s (one error naming the file, said once, the series goes on after).
// A 1.5 table, without accumulation_counter, serves no gpu_pcie and says so once at Info.
func TestAMDGPUPCIeBytes(t *testing.T) {
	root := amdNode(t, 1000, 5)
	s, logs, clock := newAMDScraper(t, root)
	require.NoError(t, s.start(context.Background(), nil))
	defer func() { require.NoError(t, s.shutdown(context.Background())) }()
	table := "sys/devices/pci0000:00/0000:05:00.0/gpu_metrics"
	write := func(m testfs.GPUMetrics) {
		var tree testfs.Tree
		tree.Bytes(table, testfs.GPUMetricsTable(m))
		require.NoError(t, tree.Write(root))
	}
	pcie := func(m pmetric.Metrics) []point {
		return find(m, "interconnect.io", "device", "gpu0", "component", "gpu_pcie", "direction", "both")
	}
	scrapeAt := func(after time.Duration) (pmetric.Metrics, error) {
		clock.t = clock.t.Add(after)
		return s.scrape(context.Background())
	}

	m := scrapeOnce(t, s)
	assert.Empty(t, pcie(m), "the first table is the baseline")
	write(mi300xMetrics(7, 1500))
	m, err := scrapeAt(10 * time.Second)
	require.NoError(t, err)
	assert.EqualValues(t, int64(240e9), one(t, m, "interconnect.io", "device", "gpu0", "component", "gpu_pcie", "direction", "both").i)
	assert.Empty(t, find(m, "interconnect.io", "device", "gpu0", "component", "gpu_pcie", "direction", "transmit"), "no direction is invented")

	m, err = scrapeAt(10 * time.Second)
	require.NoError(t, err)
	assert.Empty(t, pcie(m), "the firmware has not accumulated since the last table")
	write(mi300xMetrics(7, 2500))
	m, err = scrapeAt(10 * time.Second)
	require.NoError(t, err)
	assert.EqualValues(t, int64(240e9+24e9*20), one(t, m, "interconnect.io", "device", "gpu0", "component", "gpu_pcie", "direction", "both").i,
		"the span since the last rated table, 20 s")

	// A GPU reset: both accumulators start again from small values.
	write(mi300xMetrics(7, 10))
	m, err = scrapeAt(10 * time.Second)
	require.NoError(t, err)
	assert.Empty(t, pcie(m), "a reset gives no rate")
	write(mi300xMetrics(7, 510))
	m, err = scrapeAt(10 * time.Second)
	require.NoError(t, err)
	assert.EqualValues(t, int64(720e9+240e9), one(t, m, "interconnect.io", "device", "gpu0", "component", "gpu_pcie", "direction", "both").i,
		"the series goes on from its total")

	// 300 GB/s: no PCIe link carries that.
	bad := mi300xMetrics(7, 1010)
	bad.PCIeBandwidthAcc = mi300xMetrics(7, 510).PCIeBandwidthAcc + 300*5000
	for i := 0; i < 2; i++ {
		if i > 0 {
			bad.AccumulationCounter += 5000
			bad.PCIeBandwidthAcc += 300 * 5000
		}
		write(bad)
		m, err = scrapeAt(10 * time.Second)
		require.True(t, scrapererror.IsPartialScrapeError(err), "%v", err)
		assert.ErrorContains(t, err, filepath.Join("card0", "device", "gpu_metrics"))
		assert.ErrorContains(t, err, "an average of 300 GB/s, more than a PCIe link carries")
		assert.Empty(t, pcie(m))
		assert.NotEmpty(t, find(m, "interconnect.io", "device", "gpu0", "component", "gpu_xgmi"), "the other series are served")
	}
	assert.Equal(t, 1, logs.FilterField(zap.String("key", "gpu0/gpu_pcie")).FilterMessage(msgSeriesMissing).Len(), "said once")
	good := bad
	good.AccumulationCounter += 5000
	good.PCIeBandwidthAcc += 24 * 5000
	write(good)
	m, err = scrapeAt(10 * time.Second)
	require.NoError(t, err)
	assert.EqualValues(t, int64(960e9+240e9), one(t, m, "interconnect.io", "device", "gpu0", "component", "gpu_pcie", "direction", "both").i)
	assert.Equal(t, 1, logs.FilterMessage(msgSeriesBack).FilterField(zap.String("key", "gpu0/gpu_pcie")).Len())

	assert.Empty(t, find(m, "interconnect.io", "device", "gpu1", "component", "gpu_pcie"))
	notProvided := logs.FilterMessage(msgNotProvided).FilterField(zap.String("key", "gpu1/gpu_pcie"))
	require.Equal(t, 1, notProvided.Len(), "said once")
	assert.Contains(t, notProvided.All()[0].ContextMap()["reason"], "gpu_metrics 1.5 has no pcie_bandwidth_acc or no accumulation_counter")
}

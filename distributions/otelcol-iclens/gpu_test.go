package otelcoliclens_test

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/fakedcgm"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// sampleValue returns the value of the first sample of name whose labels include every one of
// labels, and whether there is one.
func sampleValue(body, name string, labels ...string) (float64, bool) {
	if v := sampleValues(body, name, labels...); len(v) > 0 {
		return v[0], true
	}
	return 0, false
}

func metricsBody(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// gpuConfig writes a collector configuration with the gpu receiver at a 1 s interval (plus the
// receiver keys in gpu, indented under it) served by the Prometheus exporter on addr, and returns
// its path.
func gpuConfig(t *testing.T, addr, gpu string) string {
	t.Helper()
	cfg := fmt.Sprintf(`
receivers:
  gpu:
    collection_interval: 1s%s
exporters:
  prometheus:
    endpoint: %s
service:
  pipelines:
    metrics: {receivers: [gpu], exporters: [prometheus]}
  telemetry: {metrics: {level: none}}
`, gpu, addr)
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	return path
}

// TestCollectorGPUHopperDCGM46 runs the built collector against the fake libdcgm.so.4 in its
// DCGM 4.6 Hopper mode (internal/fakedcgm/csrc/fakedcgm.c: the three fixed metric-group ranges of
// DcgmModuleCore.cpp list 1091/1092 on every GPM GPU; on a driver without the GPM PCIe counter
// they stay blank) with history following the wall clock. This is G1 of the hardware review: such
// a node got no GPU PCIe bytes and no word about it. The collector must serve PCIe bytes growing
// at the fake's rates (GPU 0 transmit 1000 B/s, GPU 1 transmit 2000 B/s, receive 2000 B/s) and
// log one line per GPU saying which source each quantity comes from.
func TestCollectorGPUHopperDCGM46(t *testing.T) {
	bin := collectorBinary(t)
	libDir := fakedcgm.Build(t)
	addr := freeAddr(t)
	cfgPath := gpuConfig(t, addr, `
    retry_interval: 5s
    dcgm: {mode: standalone, endpoint: "localhost:5555", sample_interval: 1s}`)
	logs := startCollectorWith(t, bin, cfgPath, []string{
		"LD_LIBRARY_PATH=" + libDir, "FAKE_DCGM_HOPPER=1", "FAKE_DCGM_REALTIME=1",
	})

	const metric = "interconnect_io_bytes_total"
	series := []struct {
		labels []string
		rate   float64
	}{
		{[]string{`component="gpu_pcie"`, `device="gpu0"`, `direction="transmit"`}, 1000},
		{[]string{`component="gpu_pcie"`, `device="gpu1"`, `direction="transmit"`}, 2000},
		{[]string{`component="gpu_pcie"`, `device="gpu0"`, `direction="receive"`}, 2000},
	}
	read := func() ([]float64, bool) {
		body := metricsBody(t, addr)
		out := make([]float64, len(series))
		for i, s := range series {
			v, ok := sampleValue(body, metric, s.labels...)
			if !ok {
				return nil, false
			}
			out[i] = v
		}
		return out, true
	}
	// The fake's samples are one second apart at constant rates, so every total the collector
	// serves is a whole number of seconds at that rate, whatever the machine's speed: the check
	// counts in the fake's samples, not in wall-clock time. The deadlines are generous bounds on
	// a few 1 s scrapes.
	wait := func(ok func([]float64) bool, what string) []float64 {
		deadline := time.Now().Add(time.Minute)
		for {
			if v, found := read(); found && ok(v) {
				return v
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s within a minute of 1 s scrapes", what)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	wholeSeconds := func(v []float64) {
		for i, s := range series {
			assert.Zero(t, math.Mod(v[i], s.rate), "%v: %.0f B is not a whole number of 1 s samples at %.0f B/s", s.labels, v[i], s.rate)
		}
	}
	first := wait(func([]float64) bool { return true }, "no GPU PCIe bytes served")
	wholeSeconds(first)
	last := wait(func(v []float64) bool {
		for i := range v {
			if v[i] <= first[i] {
				return false
			}
		}
		return true
	}, "GPU PCIe bytes did not grow")
	wholeSeconds(last)

	// The source of each quantity is said once DCGM's GPM fields have settled (a few polls).
	deadline := time.Now().Add(time.Minute)
	for strings.Count(logs.String(), "GPU interconnect bytes: source per quantity") < 2 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	out := logs.String()
	assert.Equal(t, 2, strings.Count(out, "GPU interconnect bytes: source per quantity"), "one line per GPU:\n%s", out)
	assert.Contains(t, out, `"gpu_pcie": "rate DCGM fields 1009/1010 (bytes/s, integrated)"`)
	assert.NotContains(t, out, "\terror\t")
}

// mi300xTable is an MI300X's gpu_metrics_v1_8 table, the version smu_v13_0_6_ppt.c
// smu_v13_0_6_get_gpu_metrics fills since "drm/amd/pm: Use gpu_metrics_v1_8 for smu_v13_0_6"
// (2025), whose seven active XGMI links have each read kb and written 2*kb KB.
func mi300xTable(kb uint64) []byte { return mi300xTableV(8, kb) }

// mi300xTableV is the same table in version 1.rev (9: the attribute-encoded gpu_metrics_v1_9).
// Its PCIe accumulators advance with kb: 10 accumulation cycles and 240 GB/s-cycles per unit, an
// average of 24 GB/s between any two tables.
func mi300xTableV(rev uint8, kb uint64) []byte {
	m := testfs.GPUMetrics{FormatRevision: 1, ContentRevision: rev, AverageUMCActivity: 40, PCIeLinkWidth: 16, PCIeLinkSpeed: 320,
		PCIeBandwidthAcc: 240 * kb, AccumulationCounter: uint32(10 * kb)}
	for l := 0; l < 7; l++ {
		m.XGMIReadDataAcc[l], m.XGMIWriteDataAcc[l] = kb, 2*kb
	}
	return testfs.GPUMetricsTable(m)
}

// waitForSample polls the collector's /metrics until the sample of name with labels satisfies ok,
// and returns it; the deadline is a generous bound on a few 1 s scrapes, not a latency target.
func waitForSample(t *testing.T, addr, name string, ok func(float64) bool, labels ...string) float64 {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if v, found := sampleValue(metricsBody(t, addr), name, labels...); found && ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s{%v} as expected within a minute of 1 s scrapes", name, labels)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestCollectorAMDGPUXGMI (N11): the built collector with the default source (auto) on an MI300X
// node without ROCm, DCGM or NVML: the GPUs are found in sysfs as amdgpu lays them out
// (testfs.AMDGPU), and their XGMI bytes are served as interconnect.io component gpu_xgmi, keyed
// by PCI address; bytes added to the table show up exactly (KB x 1024, summed over links), and
// per link with the opt-in gpu.xgmi.link.io. Each GPU's PCIe is one series, direction="both"
// (pcie_bandwidth_acc counts no direction): served once the accumulators moved, and never as
// transmit or receive. Its value is the table's 24 GB/s times the span between two of the
// collector's own scrapes, which this test does not control; the arithmetic is checked on a set
// clock by the receiver's TestAMDGPUPCIeBytes.
func TestCollectorAMDGPUXGMI(t *testing.T) {
	bin := collectorBinary(t)
	root := t.TempDir()
	gpu := testfs.AMDGPU{Card: 0, Address: "0000:05:00.0", RootBus: "pci0000:00", NUMANode: 0, ProductName: "AMD Instinct MI300X", Metrics: mi300xTable(1000)}
	// A second MI300X on a driver that fills the attribute-encoded gpu_metrics_v1_9.
	gpu1 := testfs.AMDGPU{Card: 1, Address: "0000:15:00.0", RootBus: "pci0000:10", NUMANode: 1, ProductName: "AMD Instinct MI300X", Metrics: mi300xTableV(9, 1000)}
	var tree testfs.Tree
	tree.AMDGPU(gpu)
	tree.AMDGPU(gpu1)
	require.NoError(t, tree.Write(root))
	addr := freeAddr(t)
	cfgPath := gpuConfig(t, addr, `
    root_path: `+root+`
    metrics:
      gpu.xgmi.link.io: {enabled: true}`)
	// An empty library path: neither libdcgm.so.4 nor libnvidia-ml.so.1 is found there.
	logs := startCollectorWith(t, bin, cfgPath, []string{"LD_LIBRARY_PATH=" + t.TempDir()})

	rx := []string{`component="gpu_xgmi"`, `device="gpu0"`, `direction="receive"`, `pci_bus_id="0000:05:00.0"`}
	first := waitForSample(t, addr, "interconnect_io_bytes_total", func(float64) bool { return true }, rx...)
	gpu.Metrics = mi300xTable(1500)
	gpu1.Metrics = mi300xTableV(9, 1500)
	var next testfs.Tree
	next.AMDGPU(gpu)
	next.AMDGPU(gpu1)
	require.NoError(t, next.Write(root))
	want := first + 7*500*1024
	got := waitForSample(t, addr, "interconnect_io_bytes_total", func(v float64) bool { return v != first }, rx...)
	assert.Equal(t, want, got, "seven links, 500 KB each")
	// The opt-in per-link series (#25) of the same scrape: eight links, the unused eighth at 0,
	// summing to the aggregate.
	var body string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		body = metricsBody(t, addr)
		if v, _ := sampleValue(body, "interconnect_io_bytes_total", rx...); v == got {
			break
		}
		require.False(t, time.Now().After(deadline), "the aggregate moved past %v", got)
	}
	links := sampleValues(body, "gpu_xgmi_link_io_bytes_total", `device="gpu0"`, `direction="receive"`)
	require.Len(t, links, 8, "one series per link of the table")
	sum := 0.0
	for _, v := range links {
		sum += v
	}
	assert.Equal(t, got, sum, "the links sum to interconnect.io gpu_xgmi")
	l7, _ := sampleValue(body, "gpu_xgmi_link_io_bytes_total", `device="gpu0"`, `direction="receive"`, `link="7"`)
	l2, _ := sampleValue(body, "gpu_xgmi_link_io_bytes_total", `device="gpu0"`, `direction="receive"`, `link="2"`)
	assert.Zero(t, l7, "the unused link")
	assert.Equal(t, got/7, l2, "each used link a seventh")
	// The 1.9 table's GPU moved what gpu0 moved (its table was written in the same tree write,
	// so it may show one scrape later).
	rx1 := []string{`component="gpu_xgmi"`, `device="gpu1"`, `direction="receive"`, `pci_bus_id="0000:15:00.0"`}
	v19 := waitForSample(t, addr, "interconnect_io_bytes_total", func(v float64) bool { return v != 0 }, rx1...)
	assert.Equal(t, got, v19, "gpu1 (gpu_metrics 1.9) moved what gpu0 moved")
	for _, g := range []string{`device="gpu0"`, `device="gpu1"`} {
		v := waitForSample(t, addr, "interconnect_io_bytes_total", func(v float64) bool { return v > 0 }, `component="gpu_pcie"`, `direction="both"`, g)
		assert.Positive(t, v, g)
		assert.Empty(t, sampleValues(metricsBody(t, addr), "interconnect_io_bytes_total", `component="gpu_pcie"`, `direction="transmit"`, g), "no direction is invented")
	}
	out := logs.String()
	assert.Contains(t, out, `"source": "amdgpu"`, "the amdgpu source was chosen:\n%s", out)
	assert.NotContains(t, out, "\terror\t")
}

// TestCollectorGPULinkHealth runs the built collector against the fake libdcgm.so.4 with its
// NVLink5 link-health fields (internal/fakedcgm/csrc/fakedcgm.c, FAKE_DCGM_NVLINK5: GPU 0 a
// GB200's Blackwell GPU with the dcgm_fields.h 1204-1219 and 1400-1402 fields, GPU 1 an H100 that
// answers NOT_SUPPORTED for all of them) and the three opt-in link-health metrics enabled: GPU 0
// serves every kind, GPU 1 none, and nothing is logged as an error.
func TestCollectorGPULinkHealth(t *testing.T) {
	bin := collectorBinary(t)
	libDir := fakedcgm.Build(t)
	addr := freeAddr(t)
	cfgPath := gpuConfig(t, addr, `
    dcgm: {mode: standalone, endpoint: "localhost:5555"}
    metrics:
      gpu.nvlink.errors: {enabled: true}
      gpu.nvlink.bit_error_rate: {enabled: true}
      gpu.c2c.errors: {enabled: true}`)
	logs := startCollectorWith(t, bin, cfgPath, []string{"LD_LIBRARY_PATH=" + libDir, "FAKE_DCGM_NVLINK5=1"})

	body := scrapeUntil(t, addr, []string{
		`gpu_c2c_errors_total{device="gpu0",c2c_error="crc"} 0`,
		`gpu_nvlink_bit_error_rate_ratio{device="gpu0",nvlink_ber="symbol"} 2.5e-09`,
		`gpu_nvlink_bit_error_rate_ratio{device="gpu0",nvlink_ber="effective"} 1e-15`,
	})
	assert.Len(t, sampleValues(body, "gpu_nvlink_errors_total", `device="gpu0"`), 11, "every NVLink5 error kind")
	for _, name := range []string{"gpu_nvlink_errors_total", "gpu_c2c_errors_total", "gpu_nvlink_bit_error_rate_ratio"} {
		assert.Empty(t, sampleValues(body, name, `device="gpu1"`), "%s: the H100 has none", name)
	}
	assert.NotContains(t, logs.String(), "\terror\t")
}

// TestCollectorGPUNVLinkPerLink runs the built collector against the fake libdcgm.so.4 in its
// DCGM 4.6 Hopper mode with the opt-in gpu.nvlink.link.io: DCGM's per-link rates
// DCGM_FI_PROF_NVLINK_L<n>_TX/RX_BYTES (1040 + 2n / 1041 + 2n, dcgm_fields.h) are integrated per
// link (fakedcgm.c: 18 links, 0-15 at 62.5 MB/s each way, 16 and 17 idle; the aggregate 1011/1012
// at 1e9 B/s). In one scrape the links sum to interconnect.io gpu_nvlink of the same GPU and
// direction, exactly: both integrate the same one-second samples, so the check counts in samples,
// not in time. Links 16 and 17 serve 0: the per-link view shows the link that carries nothing.
func TestCollectorGPUNVLinkPerLink(t *testing.T) {
	bin := collectorBinary(t)
	libDir := fakedcgm.Build(t)
	addr := freeAddr(t)
	cfgPath := gpuConfig(t, addr, `
    dcgm: {mode: standalone, endpoint: "localhost:5555", sample_interval: 1s}
    metrics:
      gpu.nvlink.link.io: {enabled: true}`)
	startCollectorWith(t, bin, cfgPath, []string{"LD_LIBRARY_PATH=" + libDir, "FAKE_DCGM_HOPPER=1", "FAKE_DCGM_REALTIME=1"})

	deadline := time.Now().Add(waitServed)
	for {
		body := metricsBody(t, addr)
		links := sampleValues(body, "gpu_nvlink_link_io_bytes_total", `device="gpu0"`, `direction="transmit"`)
		aggregate, ok := sampleValue(body, "interconnect_io_bytes_total", `device="gpu0"`, `component="gpu_nvlink"`, `direction="transmit"`)
		link0, _ := sampleValue(body, "gpu_nvlink_link_io_bytes_total", `device="gpu0"`, `direction="transmit"`, `link="0"`)
		var sum float64
		for _, v := range links {
			sum += v
		}
		// The exporter takes in a scrape's metrics one by one, so a read can fall between the
		// aggregate's update and the links': such a read is tried again, a lasting mismatch fails
		// at the deadline.
		if ok && len(links) == 18 && link0 > 0 && sum == aggregate {
			idle, _ := sampleValue(body, "gpu_nvlink_link_io_bytes_total", `device="gpu0"`, `direction="receive"`, `link="17"`)
			assert.Zero(t, idle, "link 17 carried nothing")
			busy, _ := sampleValue(body, "gpu_nvlink_link_io_bytes_total", `device="gpu0"`, `direction="receive"`, `link="15"`)
			assert.Zero(t, math.Mod(busy, 62.5e6), "link 15: whole one-second samples at 62.5 MB/s, %v B", busy)
			assert.Len(t, sampleValues(body, "gpu_nvlink_link_io_bytes_total", `device="gpu1"`), 36, "18 links, two directions")
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no per-link NVLink bytes for gpu0 summing to its aggregate within %s of 1 s scrapes: %d links, sum %v, aggregate %v",
				waitServed, len(links), sum, aggregate)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestCollectorGPUNVLinkPerLinkBlackwell: the built collector on the fake libdcgm.so.4's B200s
// under DCGM 4.6 (fakedcgm.c FAKE_DCGM_BLACKWELL: 1040-1075 blank at every sample, 1532/1533 on each
// link's DCGM_FE_LINK entity, link l at 62.5 MB/s + (2l - 15) MB/s transmit and - (2l - 15) MB/s
// receive, 16 and 17 idle) with the opt-in gpu.nvlink.link.io: through go-dcgm's cgo path, the 18
// links' bytes sum to the aggregate gpu_nvlink of their GPU and direction in every scrape, before
// and after 1040-1075 are given up (three polls of blanks), and each link serves its own rate.
func TestCollectorGPUNVLinkPerLinkBlackwell(t *testing.T) {
	bin := collectorBinary(t)
	libDir := fakedcgm.Build(t)
	addr := freeAddr(t)
	cfgPath := gpuConfig(t, addr, `
    dcgm: {mode: standalone, endpoint: "localhost:5555", sample_interval: 1s}
    metrics:
      gpu.nvlink.link.io: {enabled: true}`)
	logs := startCollectorWith(t, bin, cfgPath, []string{"LD_LIBRARY_PATH=" + libDir, "FAKE_DCGM_BLACKWELL=1", "FAKE_DCGM_REALTIME=1"})

	// matched holds the aggregates (gpu0 transmit) seen with links summing to them. The exporter
	// takes in a scrape's metrics one by one, so a read can fall between the aggregate's update
	// and the links': such a read is tried again. Six matching scrapes take the source past its
	// decision (gpmDecidePolls, three 1 s polls) and the replan it makes.
	matched := map[float64]bool{}
	deadline := time.Now().Add(waitServed)
	for len(matched) < 6 {
		body := metricsBody(t, addr)
		consistent := true
		for _, dev := range []string{"gpu0", "gpu1"} {
			for _, dir := range []string{"transmit", "receive"} {
				links := sampleValues(body, "gpu_nvlink_link_io_bytes_total", `device="`+dev+`"`, `direction="`+dir+`"`)
				aggregate, ok := sampleValue(body, "interconnect_io_bytes_total", `device="`+dev+`"`, `component="gpu_nvlink"`, `direction="`+dir+`"`)
				var sum float64
				for _, v := range links {
					sum += v
				}
				consistent = consistent && ok && aggregate > 0 && len(links) == 18 && sum == aggregate
			}
		}
		if consistent {
			agg, _ := sampleValue(body, "interconnect_io_bytes_total", `device="gpu0"`, `component="gpu_nvlink"`, `direction="transmit"`)
			matched[agg] = true
			tx3, _ := sampleValue(body, "gpu_nvlink_link_io_bytes_total", `device="gpu0"`, `direction="transmit"`, `link="3"`)
			rx3, _ := sampleValue(body, "gpu_nvlink_link_io_bytes_total", `device="gpu0"`, `direction="receive"`, `link="3"`)
			assert.Zero(t, math.Mod(tx3, 53.5e6), "link 3 transmit: whole one-second samples at 53.5 MB/s, %v B", tx3)
			assert.Zero(t, math.Mod(rx3, 71.5e6), "link 3 receive: whole one-second samples at 71.5 MB/s, %v B", rx3)
			assert.InDelta(t, tx3/53.5e6, rx3/71.5e6, 0, "the same seconds each way")
			idle, _ := sampleValue(body, "gpu_nvlink_link_io_bytes_total", `device="gpu1"`, `direction="transmit"`, `link="17"`)
			assert.Zero(t, idle, "link 17 carried nothing")
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d scrapes with gpu0's and gpu1's 18 links summing to their aggregates within %s:\n%s", len(matched), waitServed, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	assert.Contains(t, logs.String(), `"gpu_nvlink_link": "rate DCGM fields 1532/1533 on DCGM_FE_LINK entities (bytes/s assumed, integrated)"`, "the source line names the fields")
	assert.NotContains(t, logs.String(), "\terror\t")
}

// TestCollectorNVLinkDegradedByLink: the built collector, its gpu receiver on the fake
// libdcgm.so.4's Hopper links (fakedcgm.c: links 0-15 at 62.5 MB/s each way, 16 and 17 idle) with
// the opt-in gpu.nvlink.link.io, and the diagnosis connector behind it: link_degraded names each
// GPU's two idle links (gpu0/nvlink16, gpu0/nvlink17) and no busy one. The fake's links carry far
// less than a real H100's, so the test lowers nvlink_busy_bytes_per_second to what they carry.
func TestCollectorNVLinkDegradedByLink(t *testing.T) {
	bin := collectorBinary(t)
	libDir := fakedcgm.Build(t)
	addr := freeAddr(t)
	cfg := fmt.Sprintf(`
receivers:
  gpu:
    collection_interval: 1s
    dcgm: {mode: standalone, endpoint: "localhost:5555", sample_interval: 1s}
    metrics:
      gpu.nvlink.link.io: {enabled: true}
connectors:
  diagnosis:
    interval: 1s
    window: 3s
    thresholds: {nvlink_busy_bytes_per_second: 1e8}
exporters:
  prometheus:
    endpoint: %s
service:
  pipelines:
    metrics: {receivers: [gpu], exporters: [diagnosis]}
    metrics/diagnosis: {receivers: [diagnosis], exporters: [prometheus]}
  telemetry: {metrics: {level: none}}
`, addr)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
	logs := startCollectorWith(t, bin, cfgPath, []string{"LD_LIBRARY_PATH=" + libDir, "FAKE_DCGM_HOPPER=1", "FAKE_DCGM_REALTIME=1"})

	const v = "diagnosis_verdict_ratio"
	body := scrapeUntil(t, addr, []string{
		v + `{verdict="link_degraded",device="gpu0/nvlink16"} 1`,
		v + `{verdict="link_degraded",device="gpu0/nvlink17"} 1`,
		v + `{verdict="link_degraded",device="gpu1/nvlink17"} 1`,
	})
	for l := range 16 {
		got, _ := sampleValue(body, v, `verdict="link_degraded"`, fmt.Sprintf(`device="gpu0/nvlink%d"`, l))
		assert.Zero(t, got, "gpu0's link %d carries its share", l)
	}
	assert.NotContains(t, logs.String(), "\terror\t")
}

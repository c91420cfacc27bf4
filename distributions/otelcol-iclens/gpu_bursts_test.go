package otelcoliclens_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/fakenvml"
)

// TestCollectorGPUNVMLBursts (#26): the built collector with the gpu receiver's fast sampler on
// (bursts.period 10ms) on an H100 node with NVML but no DCGM: the fake libnvidia-ml.so.1 on the
// wall clock, whose GPUs' PCIe transmit moves in the JANOG step (FAKE_NVML_PCIE_BURST: 40 ms at
// 40000 MiB/s every 600 ms, 2.8 GB/s on average), their receive at a constant 3 MiB/s. The
// collector serves gpu.burst.peak_rate at the bursts' rate, within 5 %. Each window is timed by
// the timestamps the fake gives its values (nvmlFieldValue_t.timestamp, the clock it computed
// them at), so no window reads above the burst rate however late a pass runs, and a window whose
// two reads fall inside one burst reads it exactly: the test waits for an interval with one,
// counting nothing in its own time. The lens view draws the peak beside the GPU's average, and
// this is where the dashboard's "GPU PCIe: peak within the interval" panel is served from
// (TestCasesInPrometheus).
func TestCollectorGPUNVMLBursts(t *testing.T) {
	bin := collectorBinary(t)
	addr, view := freeAddr(t), freeAddr(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`
receivers:
  gpu:
    collection_interval: 1s
    source: nvml
    bursts: {period: 10ms}
exporters:
  prometheus:
    endpoint: %s
  lensview:
    endpoint: %s
service:
  pipelines:
    metrics: {receivers: [gpu], exporters: [prometheus, lensview]}
  telemetry: {metrics: {level: none}}
`, addr, view)), 0o644))
	logs := startCollectorWith(t, bin, cfg, []string{"LD_LIBRARY_PATH=" + fakenvml.Build(t), "FAKE_NVML_MODEL=h100",
		"FAKE_NVML_PCIE_BURST=40000:600000:40000"})

	const metric = "gpu_burst_peak_rate_bytes_per_second"
	label := func(device, direction string) []string {
		return []string{`component="gpu_pcie"`, `device="` + device + `"`, `direction="` + direction + `"`, `burst_window="10ms"`}
	}
	within := func(want, tol float64) func(float64) bool {
		return func(v float64) bool { return math.Abs(v-want) <= tol*want }
	}
	const burst = 40000 << 20
	waitForSample(t, addr, metric, within(burst, 0.05), append(label("gpu0", "transmit"), `pci_bus_id="0000:1b:00.0"`)...)
	waitForSample(t, addr, metric, within(burst, 0.05), append(label("gpu1", "transmit"), `pci_bus_id="0000:3b:00.0"`)...)
	waitForSample(t, addr, metric, within(nvmlPCIeRx, 0.01), label("gpu0", "receive")...)

	// interconnect.io still carries the GPU's PCIe bytes (GPM's rates, integrated: the sampler
	// reads the counters 197/198 beside them).
	waitForSample(t, addr, "interconnect_io_bytes_total", func(v float64) bool { return v > 0 }, ioLabels("gpu_pcie", "transmit")...)
	body := metricsBody(t, addr)
	for _, v := range sampleValues(body, metric, `direction="transmit"`) {
		assert.LessOrEqual(t, v, burst*1.0001, "no window reads above the burst rate:\n%s", body)
	}
	out := logs.String()
	assert.NotContains(t, out, "The fast sampler cannot")
	assert.NotContains(t, out, "\terror\t")

	// The view: gpu0's transmit peak line, at the bursts' rate where the average is 2.8 GB/s.
	var line viewLine
	for deadline := time.Now().Add(waitServed); ; time.Sleep(200 * time.Millisecond) {
		var ok bool
		if line, ok = nodeViewLine(t, view, "GPU0 PCIe[TX] peak/10ms"); ok && len(line.V) > 0 && within(burst, 0.05)(line.V[len(line.V)-1]) {
			break
		}
		require.True(t, time.Now().Before(deadline), "the view has no GPU0 PCIe[TX] peak at the burst rate within %s: %+v", waitServed, line)
	}
	assert.Equal(t, "peak", line.Kind)
}

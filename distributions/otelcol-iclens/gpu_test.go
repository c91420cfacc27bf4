package otelcoliclens_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/fakedcgm"
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
	cfg := fmt.Sprintf(`
receivers:
  gpu:
    collection_interval: 1s
    retry_interval: 5s
    dcgm: {mode: standalone, endpoint: "localhost:5555", sample_interval: 1s}
exporters:
  prometheus:
    endpoint: %s
service:
  pipelines:
    metrics: {receivers: [gpu], exporters: [prometheus]}
  telemetry: {metrics: {level: none}}
`, addr)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
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
	var first []float64
	deadline := time.Now().Add(30 * time.Second)
	for first == nil && time.Now().Before(deadline) {
		if v, ok := read(); ok {
			first = v
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.NotNil(t, first, "no GPU PCIe bytes served")
	t0 := time.Now()
	time.Sleep(6 * time.Second)
	last, ok := read()
	require.True(t, ok)
	elapsed := time.Since(t0).Seconds()
	for i, s := range series {
		rate := (last[i] - first[i]) / elapsed
		// One-second samples read every second: the served total lags by up to two samples at
		// either end of the window.
		assert.InDelta(t, s.rate, rate, s.rate*2.5/elapsed, "%v: %.0f B/s", s.labels, rate)
	}

	out := logs.String()
	assert.Equal(t, 2, strings.Count(out, "GPU interconnect bytes: source per quantity"), "one line per GPU:\n%s", out)
	assert.Contains(t, out, `"gpu_pcie": "rate DCGM fields 1009/1010 (bytes/s, integrated)"`)
	assert.NotContains(t, out, "\terror\t")
}

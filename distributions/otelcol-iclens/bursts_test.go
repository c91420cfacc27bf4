package otelcoliclens_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/tools/simulate"
)

// burstSnapshot is what one /metrics answer says about the bursty port's transmit direction.
type burstSnapshot struct {
	bytes, peak, above90, windows float64
}

// Prometheus names of the rnic receiver's burst metrics (the exporter appends the unit).
const (
	promPeak        = "rnic_burst_peak_rate_bytes_per_second"
	promAbove       = "rnic_burst_time_above_seconds_total"
	promUtilization = "rnic_burst_utilization_count"
)

func burstMetrics(t *testing.T, addr string) (burstSnapshot, string, bool) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return burstSnapshot{}, "", false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return burstSnapshot{}, "", false
	}
	body := string(b)
	port := []string{`device="` + scenario.NIC + `/1"`, `direction="transmit"`, `component="rnic"`}
	one := func(name string, extra ...string) (float64, bool) {
		v := sampleValues(body, name, append(append([]string(nil), port...), extra...)...)
		if len(v) != 1 {
			return 0, false
		}
		return v[0], true
	}
	var s burstSnapshot
	var ok [4]bool
	s.bytes, ok[0] = one("interconnect_io_bytes_total")
	s.peak, ok[1] = one(promPeak)
	s.above90, ok[2] = one(promAbove, `burst_share="0.9"`)
	s.windows, ok[3] = one(promUtilization)
	return s, body, ok[0] && ok[1] && ok[2] && ok[3]
}

// TestBurstsThroughCollector replays the simulator's bursty case (40 ms line-rate bursts every
// 600 ms, the JANOG step shape, with the fast sampler's readings every 10 ms in the recording)
// through the built collector: the peak of each interval is within 5 % of the line rate, the time
// above 90 % is within 10 ms of 40 ms per burst, and the average rate of interconnect.io is the
// bursts' average, 40/600 of line rate. Everything is counted on the recording's time axis (the
// histogram's windows of 10 ms), never on the wall clock: the replay gives one recorded second
// per scrape however late the scrape comes.
func TestBurstsThroughCollector(t *testing.T) {
	bin := collectorBinary(t)
	dir := t.TempDir()
	fixture := filepath.Join("..", "..", "receiver", "cpuuncorereceiver", "testdata", "skx")
	_, err := simulate.WriteCases(simulate.Options{Dir: dir, Interval: time.Second, Samples: 120, UncoreFixture: fixture}, scenario.BurstCases())
	require.NoError(t, err)
	addr := freeAddr(t)
	cfg := fmt.Sprintf(`receivers:
  rnic:
    collection_interval: 250ms
    initial_delay: 0s
    recording: {replay: %q, loop: true}
exporters:
  prometheus:
    endpoint: %s
service:
  telemetry: {metrics: {level: none}}
  pipelines:
    metrics: {receivers: [rnic], exporters: [prometheus]}
`, filepath.Join(dir, scenario.BurstCase, "node1-rnic.jsonl"), addr)
	cfgPath := filepath.Join(dir, "otelcol.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
	logs := startCollectorWith(t, bin, cfgPath, nil)

	// Two snapshots 30 recorded seconds (3000 windows) apart, both within the recording's first lap
	// of 120 s (a lap starts the counters over).
	var a, b burstSnapshot
	var body string
	require.Eventually(t, func() bool {
		var ok bool
		a, body, ok = burstMetrics(t, addr)
		return ok && a.windows >= 500
	}, waitServed, 100*time.Millisecond, "the burst metrics were not served: %s\n%s", body, logs)
	require.Eventually(t, func() bool {
		var ok bool
		b, body, ok = burstMetrics(t, addr)
		return ok && b.windows >= a.windows+3000
	}, 4*waitServed, 100*time.Millisecond, "30 more recorded seconds were not served: %s", body)
	require.Less(t, b.windows, 11900.0, "past the first lap")

	line := scenario.LineRate
	for _, s := range []burstSnapshot{a, b} {
		assert.InEpsilon(t, line, s.peak, 0.05, "peak within 5 %% of line rate")
	}
	recorded := (b.windows - a.windows) * scenario.JANOGStep.Sample.Seconds()
	bursts := recorded / scenario.JANOGStep.Every.Seconds()
	perBurst := (b.above90 - a.above90) / bursts
	t.Logf("%.0f windows (%.2f recorded s, %.1f bursts): %.2f ms above 90 %% per burst, peak %.4g B/s, average %.4g B/s",
		b.windows-a.windows, recorded, bursts, perBurst*1e3, b.peak, (b.bytes-a.bytes)/recorded)
	assert.InDelta(t, scenario.JANOGStep.Burst.Seconds(), perBurst, 0.010, "time above 90 %% within 10 ms per burst")
	// Over 30 s the window's edges cut at most one burst: 40 ms of 30 s at line rate, 1.1 %.
	assert.InEpsilon(t, scenario.JANOGStep.Average(), (b.bytes-a.bytes)/recorded, 0.02, "the average is the bursts' average")
}

// TestDeviceCheckBurstReadCost: on the host group's RDMA stand-in (rdmaCheckNode: two ConnectX-7
// RoCE ports with counters/port_xmit_data, laid out as drivers/infiniband/core/sysfs.c creates
// them), rnic_burst_read_cost times one read of the data counter, says what a fast-sampler pass
// over the node costs at 10 ms and 100 ms, and, the counter not moving, how to measure its update
// granularity.
func TestDeviceCheckBurstReadCost(t *testing.T) {
	out, err := runHostDeviceCheck(t, false, mlx5Drivers, 16)
	require.NoError(t, err)
	assert.Contains(t, out, "device-check: PASS rnic_burst_read_cost\n")
	assert.Regexp(t, `counters/port_xmit_data: one read [0-9.]+ us \(200 reads\)`, out)
	assert.Regexp(t, `a pass over 2 ports \(4 counters each\): [0-9]+ us: [0-9.]+ % of a core at bursts.period 10ms`, out)
	assert.Contains(t, out, "run with DEVICE_CHECK_HOST_LOAD driving ib_write_bw through it to measure it")
}

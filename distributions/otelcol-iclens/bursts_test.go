package otelcoliclens_test

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/internal/syncbuf"
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

// startBurstReplay starts the built collector replaying the simulator's bursty case's rnic
// recording (its 10 ms sub-samples folded by the fast sampler) into one exporter, given as its
// YAML ("prometheus:\n    endpoint: ..."), scraping every interval.
func startBurstReplay(t *testing.T, bin string, interval time.Duration, exporter string) *syncbuf.Buffer {
	t.Helper()
	dir := t.TempDir()
	fixture := filepath.Join("..", "..", "receiver", "cpuuncorereceiver", "testdata", "skx")
	_, err := simulate.WriteCases(simulate.Options{Dir: dir, Interval: time.Second, Samples: 120, UncoreFixture: fixture}, scenario.BurstCases())
	require.NoError(t, err)
	name, _, _ := strings.Cut(exporter, ":")
	cfg := fmt.Sprintf(`receivers:
  rnic:
    collection_interval: %s
    initial_delay: 0s
    recording: {replay: %q, loop: true}
exporters:
  %s
service:
  telemetry: {metrics: {level: none}}
  pipelines:
    metrics: {receivers: [rnic], exporters: [%s]}
`, interval, filepath.Join(dir, scenario.BurstCase, "node1-rnic.jsonl"), exporter, name)
	cfgPath := filepath.Join(dir, "otelcol.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
	return startCollectorWith(t, bin, cfgPath, nil)
}

// startBurstCasesAsDemo writes the simulator's bursty cases (scenario.BurstCases) to dir and runs
// the built collector over them with the demo's configuration (iclens-simulate: every receiver,
// the diagnosis connector, Prometheus and the view, the capture extension), env added.
func startBurstCasesAsDemo(t *testing.T, dir string, env ...string) *syncbuf.Buffer {
	t.Helper()
	bin := collectorBinary(t)
	fixture := filepath.Join("..", "..", "receiver", "cpuuncorereceiver", "testdata", "skx")
	cases := scenario.BurstCases()
	_, err := simulate.WriteCases(simulate.Options{Dir: dir, Interval: time.Second, Samples: 120, UncoreFixture: fixture}, cases)
	require.NoError(t, err)
	cfg, err := simulate.CollectorConfigFor(dir, time.Second, simulate.ExportPrometheus, cases)
	require.NoError(t, err)
	cfgPath := filepath.Join(dir, "otelcol.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
	return startCollectorWith(t, bin, cfgPath, env)
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
	addr := freeAddr(t)
	logs := startBurstReplay(t, bin, 250*time.Millisecond, fmt.Sprintf("prometheus:\n    endpoint: %s", addr))

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

// TestLensViewDrawsBurstsInBrowser replays the bursty case's rnic recording (40 ms at line rate
// every 600 ms, 6.7 % on average) through the built collector into the lensview exporter, and
// looks at the node's page in headless Chromium: the chart draws the port's peak window rate and
// its time above 90 % of the line beside the average, and the port table says the peak (within
// 5 % of the line rate) and the share of the newest interval at or above 90 % (the bursts it
// holds, 40 ms each).
func TestLensViewDrawsBurstsInBrowser(t *testing.T) {
	bin := collectorBinary(t)
	browser := chromiumBinary(t)
	view := freeAddr(t)
	startBurstReplay(t, bin, time.Second, fmt.Sprintf("lensview:\n    endpoint: %s", view))

	ctx, blog := startBrowser(t, browser, 3*time.Minute)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("http://"+view+"/")))
	const port = "RNIC(" + scenario.NIC + ")[TX]"
	// Four samples in the port's row: its rates are its newest three intervals'.
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`lens.chart !== null && lens.chart.series.some(s => s.label === %q) &&
		lens.chart.series.some(s => s.label === %q) && (lens.series.get('time_above/rnic/transmit/%s/0.9') || {t: []}).t.length >= 4`,
		port+" peak/10ms", port+" ≥90 % of line", scenario.NIC+"/1"),
		chromedp.WithPollingTimeout(2*waitServed), chromedp.WithPollingInterval(200*time.Millisecond)))
	require.NoError(t, err, "the burst lines were not drawn (waited %s); the chart has %q", 2*waitServed, text(t, ctx, "#chart"))

	row := rowText(t, ctx, "#ports tbody tr")
	m := regexp.MustCompile(`(\d+(?:\.\d+)?) GB/s / 10ms`).FindStringSubmatch(row)
	require.NotNil(t, m, "the peak in the port table: %q", row)
	peak, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	assert.InEpsilon(t, scenario.LineRate, peak*1e9, 0.05, "the peak is the line rate: %q", row)
	m = regexp.MustCompile(`≥90 %: (\d+(?:\.\d+)?) %`).FindStringSubmatch(row)
	require.NotNil(t, m, "the time above 90 %% in the port table: %q", row)
	above, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	// The node state's newest interval (one recorded second) holds one or two of the 40 ms bursts
	// that come every 600 ms: 4 % or 8 % of it at line rate, never the 6.7 % average.
	burst := 100 * scenario.JANOGStep.Burst.Seconds()
	assert.True(t, math.Abs(above-burst) < 0.5 || math.Abs(above-2*burst) < 0.5, "time at or above 90 %% of the line: one or two bursts of %.0f %% of the second: %q", burst, row)

	painted, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]int](paintedPixels, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	assert.Positive(t, painted[port+" peak/10ms"], "the peak line is painted: %v", painted)
	assert.Positive(t, painted[port+" ≥90 % of line"], "the time-above line is painted: %v", painted)
	assert.Positive(t, painted[port], "the average is painted: %v", painted)
	assertOnlyOwnHost(t, blog, view)
}

// TestCongestionInBurstsThroughCollector replays the simulator's bursty_congestion case (180 ms
// at line rate every 600 ms, 30 % on average, its bursts ECN-marked at 2.4e-4 per packet: fewer
// than sustained congestion needs) through the built collector's rnic, cpuuncore and gpu
// receivers, the rnic receiver folding the recording's 10 ms sub-samples, with the demo's
// configuration (iclens-simulate): the diagnosis connector names both nodes fabric_congestion
// from the fast sampler's time above 90 % of the line, and neither healthy; the healthy bursty
// case beside it (40 ms bursts, unmarked) stays healthy.
func TestCongestionInBurstsThroughCollector(t *testing.T) {
	cases := scenario.BurstCases()
	addr := freeAddr(t)
	logs := startBurstCasesAsDemo(t, t.TempDir(), "ICLENS_PROMETHEUS_ENDPOINT="+addr, "ICLENS_LENSVIEW_ENDPOINT="+freeAddr(t))

	// Every node-level verdict of a host the connector reports, holding (1) or not (0).
	verdictRE := regexp.MustCompile(`verdict="([a-z_]+)"`)
	verdicts := func(body, host string) map[string]float64 {
		out := map[string]float64{}
		for _, line := range strings.Split(body, "\n") {
			if !strings.HasPrefix(line, "diagnosis_verdict_ratio{") || !strings.Contains(line, `host_name="`+host+`"`) || !strings.Contains(line, `device=""`) {
				continue
			}
			m := verdictRE.FindStringSubmatch(line)
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if m != nil && err == nil {
				out[m[1]] = v
			}
		}
		return out
	}
	want := map[string]string{}
	for _, c := range cases {
		for n, node := range scenario.Nodes {
			want[scenario.HostName(c, node)] = c.Phases[0].Expect[n][0]
		}
	}
	var body string
	ok := assert.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return false
		}
		body = string(b)
		for host, v := range want {
			if verdicts(body, host)[v] != 1 {
				return false
			}
		}
		return true
	}, 4*waitServed, 250*time.Millisecond, "the bursty cases' verdicts were not served (waited %s)", 4*waitServed)
	for host, v := range want {
		got := verdicts(body, host)
		t.Logf("%s: %v", host, got)
		if ok {
			for other, x := range got {
				if other != v {
					assert.Zero(t, x, "%s: %s beside %s", host, other, v)
				}
			}
		}
	}
	if !ok {
		t.Logf("collector log:\n%s", logs)
	}
	assert.Regexp(t, `bursty_congestion-node1: fabric congestion: mlx5_0/1 transmits [^;]* on average, at ≥90\.0% of its line [0-9.]+% of the time \(peak [0-9.]+ GB/s over 10ms\): its queues fill in every burst`,
		logs.String(), "the congestion sentence says the bursts")
}

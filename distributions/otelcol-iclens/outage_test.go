package otelcoliclens_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/internal/syncbuf"
	"github.com/otelcol-iclens/otelcol-iclens/tools/simulate"
)

// The outage test's timeline: points reach Prometheus before the outage, Prometheus is down for
// outageFor, the collector is stopped (SIGTERM) and started again restartAfter into it.
const (
	outageInterval = time.Second
	beforeOutage   = 10 * time.Second
	outageFor      = 60 * time.Second
	restartAfter   = 25 * time.Second
)

// outageBackend is what the collector pushes to in an outage test: it can go away and come back,
// and it says which points it holds.
type outageBackend interface {
	stop(t *testing.T)
	start(t *testing.T)
	// newest returns, per series, how many seconds ago its newest point was collected.
	newest(t *testing.T) []float64
	// collected returns the collection timestamps (s) it holds per series, from..to.
	collected(t *testing.T, from, to time.Time) map[string][]float64
}

// TestRemoteWriteOutage runs the shipped remote-write example (examples/prometheus-remote-write,
// its exporter and queue settings unchanged) on a simulated node replayed at 1 s, against a real
// Prometheus that is stopped for 60 s; during the outage the collector is restarted once. Every
// point the collector collected must then be in Prometheus: per series, one sample per
// collection, no gap but the collector's own downtime.
func TestRemoteWriteOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("takes about two minutes")
	}
	// Each outage test waits out its timeline on the clock, its collector and backend on ports
	// of their own: the two (and the other clock-bound tests) overlap.
	t.Parallel()
	example := filepath.Join("..", "..", "examples", "prometheus-remote-write", "config.yaml")
	if p := os.Getenv("ICLENS_OUTAGE_CONFIG"); p != "" {
		example = p // another delivery configuration under the same outage (README.md, "Delivery")
	}
	prom := &promBackend{newPrometheus(t), `interconnect_io_bytes_total{host_name="` + outageHost + `"}`}
	runOutage(t, example, prom, []string{"PROM_RW_URL=http://" + prom.addr + "/api/v1/write"})
}

// TestOTLPOutage: the same outage for the OTLP example (examples/otlp-vendor: otlp_http with a
// persistent sending_queue in file_storage), pushing to an OTLP/HTTP backend that records every
// point it is sent; here a point received twice counts as a duplicate.
func TestOTLPOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("takes about two minutes")
	}
	t.Parallel() // as TestRemoteWriteOutage
	sink := newOTLPSink(t)
	runOutage(t, filepath.Join("..", "..", "examples", "otlp-vendor", "config.yaml"), sink,
		otlpExampleEnv(t, "OTLP_ENDPOINT=http://"+sink.addr, "OTLP_TOKEN=test"))
}

const outageHost = "outage-node1"

// runOutage is the outage timeline: the built collector runs example (with the simulated node's
// replaying receivers in place of the hardware's) and pushes to backend, which goes away for
// outageFor; restartAfter into it the collector gets SIGTERM and is started again. Then every
// collection of both runs must be in the backend once.
func runOutage(t *testing.T, example string, backend outageBackend, env []string) {
	bin := collectorBinary(t)
	overlay := simulatedNodeOverlay(t)

	state := t.TempDir()
	args := []string{"--config", example, "--config", overlay}
	telemetry := freeAddr(t)
	env = append(env, "HOSTNAME="+outageHost, "STATE_DIRECTORY="+state, "ICLENS_TELEMETRY_PORT="+port(t, telemetry))
	logs := &syncbuf.Buffer{}

	start1 := time.Now()
	col := runCollector(t, bin, args, env, logs)
	require.Eventually(t, func() bool { return len(backend.newest(t)) > 0 },
		30*time.Second, 500*time.Millisecond, "no point reached the backend before the outage")
	time.Sleep(beforeOutage)

	backend.stop(t)
	outage := time.Now()
	time.Sleep(restartAfter)
	down := time.Now()
	require.NoError(t, col.stop(30*time.Second), "clean shutdown during the outage")
	up := time.Now()
	runCollector(t, bin, args, env, logs)
	// When the second run was ready (its own log line): a loaded machine takes seconds to start a
	// collector, which is no gap in what it collects once it runs.
	var ready time.Time
	require.Eventually(t, func() bool {
		if r := readyTimes(logs.String()); len(r) >= 2 {
			ready = r[1]
			return true
		}
		return false
	}, 60*time.Second, 100*time.Millisecond, "the second run never said it was ready")
	time.Sleep(time.Until(outage.Add(outageFor)))
	onDisk := dirSize(t, state)
	// The queue's size per point: the second run's points per second, from its own telemetry.
	perSecond := acceptedPoints(t, telemetry) / time.Since(up).Seconds()
	backend.start(t)
	back := time.Now()

	// Wait for the queue to drain: the newest point of every series is recent again.
	require.Eventually(t, func() bool {
		s := backend.newest(t)
		for _, age := range s {
			// Within the batch processor's 5 s and the write-ahead log's 5 s read cycle.
			if age > 15 {
				return false
			}
		}
		return len(s) > 0
	}, 60*time.Second, time.Second, "the points of the outage did not reach the backend")
	t.Logf("caught up %s after the backend came back; %d bytes on disk after the %s outage, %.0f points/s collected: %.0f bytes a point",
		time.Since(back).Round(time.Second), onDisk, outageFor, perSecond, float64(onDisk)/(perSecond*outageFor.Seconds()))

	// Everything collected up to a point well before now (past the batch and the queue's read cycle).
	end := time.Now().Add(-20 * time.Second)
	got := backend.collected(t, start1, end)
	require.NotEmpty(t, got)
	iv := outageInterval.Seconds()
	sec := func(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }
	var expected, received int
	for name, ts := range got {
		received += len(ts)
		// Both runs: from the first collection of each to the last before the stop or the end.
		var run1, run2 []float64
		for _, x := range ts {
			if x < sec(up) {
				run1 = append(run1, x)
			} else {
				run2 = append(run2, x)
			}
		}
		if !assert.NotEmpty(t, run1, name) || !assert.NotEmpty(t, run2, name) {
			continue
		}
		// The first run lasted until the SIGTERM and the second until end: one point a second.
		expected += int((sec(down)-run1[0])/iv) + 1
		expected += int((sec(end)-run2[0])/iv) + 1
		assert.InDelta(t, sec(down), run1[len(run1)-1], 1.5*iv, "%s: the last point before the restart is there", name)
		assert.InDelta(t, sec(ready), run2[0], 2*iv, "%s: the second run's first point is there (ready %.1f s after its start)", name, ready.Sub(up).Seconds())
		for _, run := range [][]float64{run1, run2} {
			for i := 1; i < len(run); i++ {
				d := run[i] - run[i-1]
				assert.True(t, d > 0.5*iv && d < 1.5*iv, "%s: %.3f s between the points at %s and %s (gap or duplicate)",
					name, d, time.UnixMilli(int64(run[i-1]*1000)).Format(time.TimeOnly), time.UnixMilli(int64(run[i]*1000)).Format(time.TimeOnly))
			}
		}
	}
	// The outage was said: a warning when the sends started failing, one when they recovered.
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "Exporter sends recovered") }, 60*time.Second, time.Second,
		"no warning that the sends recovered")
	assert.Contains(t, logs.String(), "Exporter sends are failing")
	t.Logf("%d series, points expected %d, received %d (outage %s at %s, collector down %s from %s)",
		len(got), expected, received, outageFor, outage.Sub(start1).Round(time.Second), up.Sub(down).Round(time.Millisecond), down.Sub(start1).Round(time.Second))
	assert.InDelta(t, expected, received, float64(2*len(got)), "every collected point once")
}

// promBackend is the end-to-end test's real Prometheus (remote-write receiver).
type promBackend struct {
	*prometheusServer
	series string
}

func (p *promBackend) newest(t *testing.T) []float64 {
	var out []float64
	for _, s := range promQuery(t, p.addr, `time() - timestamp(`+p.series+`)`) {
		out = append(out, s.value)
	}
	return out
}

func (p *promBackend) collected(t *testing.T, from, to time.Time) map[string][]float64 {
	return promRange(t, p.addr, p.series, from, to)
}

// acceptedPoints sums otelcol_receiver_accepted_metric_points over the receivers in the
// collector's own telemetry.
// readyTimes are the times of the collector's "Everything is ready" lines in logs (the service's
// own, once every pipeline started), one per run, in order.
func readyTimes(logs string) []time.Time {
	var out []time.Time
	for _, line := range strings.Split(logs, "\n") {
		if !strings.Contains(line, "Everything is ready") {
			continue
		}
		if ts, err := time.Parse(time.RFC3339Nano, strings.SplitN(line, "\t", 2)[0]); err == nil {
			out = append(out, ts)
		}
	}
	return out
}

func acceptedPoints(t *testing.T, addr string) float64 {
	t.Helper()
	body := scrapeUntil(t, addr, nil)
	var n float64
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "otelcol_receiver_accepted_metric_points{") {
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			require.NoError(t, err, line)
			n += v
		}
	}
	require.Positive(t, n, "no accepted points in the collector's telemetry:\n%s", body)
	return n
}

func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return err
	}))
	return n
}

// simulatedNodeOverlay writes a simulated node's recordings (60 samples at outageInterval) and
// the replayOverlay that replays them, and returns the overlay's path.
func simulatedNodeOverlay(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	fixture := filepath.Join("..", "..", "receiver", "cpuuncorereceiver", "testdata", "skx")
	_, err := simulate.Write(simulate.Options{Dir: dir, Interval: outageInterval, Samples: 60, UncoreFixture: fixture})
	require.NoError(t, err)
	c := scenario.Cases()[0]
	overlay := filepath.Join(dir, "replay.yaml")
	require.NoError(t, os.WriteFile(overlay, []byte(replayOverlay(filepath.Join(dir, c.Name, scenario.Nodes[0]), outageInterval)), 0o644))
	return overlay
}

// replayOverlay is a second --config file on top of the example: the replayed node's receivers
// instead of the hardware's, the example's processors, exporter and queue unchanged.
func replayOverlay(prefix string, interval time.Duration) string {
	var b strings.Builder
	b.WriteString("receivers:\n")
	var names []string
	for _, r := range []string{"rnic", "cpuuncore", "gpu"} {
		names = append(names, r+"/replay")
		fmt.Fprintf(&b, "  %s/replay:\n    collection_interval: %s\n    initial_delay: 0s\n", r, interval)
		if r == "gpu" {
			fmt.Fprintf(&b, "    dcgm: {sample_interval: %s}\n", interval)
		}
		fmt.Fprintf(&b, "    recording: {replay: %q, loop: true}\n", prefix+"-"+r+".jsonl")
	}
	fmt.Fprintf(&b, "service:\n  pipelines:\n    metrics:\n      receivers: [%s]\n", strings.Join(names, ", "))
	// The example's delivery_watch, checking every 2 s instead of 10 so that its warnings come
	// within the test's minutes.
	b.WriteString("extensions:\n  delivery_watch: {check_interval: 2s}\n")
	return b.String()
}

func port(t *testing.T, addr string) string {
	t.Helper()
	i := strings.LastIndexByte(addr, ':')
	require.Positive(t, i)
	return addr[i+1:]
}

// promRange returns the raw sample timestamps (seconds) of every series matching selector
// between from and to, keyed by the series' labels.
func promRange(t *testing.T, addr, selector string, from, to time.Time) map[string][]float64 {
	t.Helper()
	window := int(to.Sub(from).Seconds()) + 1
	result := promAPIQuery(t, addr, fmt.Sprintf("%s[%ds]", selector, window), to)
	out := map[string][]float64{}
	for _, s := range result {
		keys := make([]string, 0, len(s.Metric))
		for k, v := range s.Metric {
			keys = append(keys, k+"="+v)
		}
		sort.Strings(keys)
		name := strings.Join(keys, ",")
		for _, v := range s.Values {
			out[name] = append(out[name], v[0].(float64))
		}
	}
	return out
}

package otelcoliclens_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/simulate"
)

// The outage test's timeline: points reach Prometheus before the outage, Prometheus is down for
// outageFor, the collector is stopped (SIGTERM) and started again restartAfter into it.
const (
	outageInterval = time.Second
	beforeOutage   = 10 * time.Second
	outageFor      = 60 * time.Second
	restartAfter   = 25 * time.Second
)

// TestRemoteWriteOutage runs the shipped remote-write example (examples/prometheus-remote-write,
// its exporter and queue settings unchanged) on a simulated node replayed at 1 s, against a real
// Prometheus that is stopped for 60 s; during the outage the collector is restarted once. Every
// point the collector collected must then be in Prometheus exactly once: per series, one sample
// per collection, no gap but the collector's own downtime, no sample twice.
func TestRemoteWriteOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("takes about two minutes")
	}
	bin := collectorBinary(t)
	prom := newPrometheus(t)

	dir := t.TempDir()
	fixture := filepath.Join("..", "..", "receiver", "cpuuncorereceiver", "testdata", "skx")
	_, err := simulate.Write(simulate.Options{Dir: dir, Interval: outageInterval, Samples: 60, UncoreFixture: fixture})
	require.NoError(t, err)
	c := simulate.Cases()[0]
	const host = "outage-node1"
	overlay := filepath.Join(dir, "replay.yaml")
	require.NoError(t, os.WriteFile(overlay, []byte(replayOverlay(filepath.Join(dir, c.Name, simulate.Nodes[0]), outageInterval)), 0o644))

	state := t.TempDir()
	example := filepath.Join("..", "..", "examples", "prometheus-remote-write", "config.yaml")
	if p := os.Getenv("ICLENS_OUTAGE_CONFIG"); p != "" {
		example = p // another delivery configuration under the same outage (README.md, "Delivery")
	}
	args := []string{"--config", example, "--config", overlay}
	env := []string{"PROM_RW_URL=http://" + prom.addr + "/api/v1/write", "HOSTNAME=" + host,
		"STATE_DIRECTORY=" + state, "ICLENS_TELEMETRY_PORT=" + port(t, freeAddr(t))}
	logs := &safeBuffer{}

	start1 := time.Now()
	col := runCollector(t, bin, args, env, logs)
	series := `interconnect_io_bytes_total{host_name="` + host + `"}`
	require.Eventually(t, func() bool { return len(promQuery(t, prom.addr, series)) > 0 },
		30*time.Second, 500*time.Millisecond, "no point reached Prometheus before the outage")
	time.Sleep(beforeOutage)

	prom.stop(t)
	outage := time.Now()
	time.Sleep(restartAfter)
	down := time.Now()
	require.NoError(t, col.stop(30*time.Second), "clean shutdown during the outage")
	up := time.Now()
	runCollector(t, bin, args, env, logs)
	time.Sleep(time.Until(outage.Add(outageFor)))
	prom.start(t)
	back := time.Now()

	// Wait for the log to drain: the newest point of every series is recent again.
	require.Eventually(t, func() bool {
		s := promQuery(t, prom.addr, `time() - timestamp(`+series+`)`)
		if len(s) == 0 {
			return false
		}
		for _, x := range s {
			if x.value > 8 {
				return false
			}
		}
		return true
	}, 60*time.Second, time.Second, "the points of the outage did not reach Prometheus")
	t.Logf("caught up %s after Prometheus came back", time.Since(back).Round(time.Second))

	// Everything collected up to a point well before now (past the log's 5 s read cycle).
	end := time.Now().Add(-10 * time.Second)
	got := promRange(t, prom.addr, series, start1, end)
	require.NotEmpty(t, got)
	iv := outageInterval.Seconds()
	var expected, received int
	for name, ts := range got {
		received += len(ts)
		// Both runs: from the first collection of each to the last before the stop or the end.
		var run1, run2 []float64
		for _, x := range ts {
			if x < float64(up.UnixMilli())/1000 {
				run1 = append(run1, x)
			} else {
				run2 = append(run2, x)
			}
		}
		if !assert.NotEmpty(t, run1, name) || !assert.NotEmpty(t, run2, name) {
			continue
		}
		// The first run lasted until the SIGTERM and the second until end: one point a second.
		expected += int((float64(down.UnixMilli())/1000-run1[0])/iv) + 1
		expected += int((float64(end.UnixMilli())/1000-run2[0])/iv) + 1
		assert.InDelta(t, float64(down.UnixMilli())/1000, run1[len(run1)-1], 1.5*iv, "%s: the last point before the restart is there", name)
		assert.InDelta(t, float64(up.UnixMilli())/1000, run2[0], 2*iv, "%s: the second run's first point is there", name)
		for _, run := range [][]float64{run1, run2} {
			for i := 1; i < len(run); i++ {
				d := run[i] - run[i-1]
				assert.True(t, d > 0.5*iv && d < 1.5*iv, "%s: %.3f s between the points at %s and %s (gap or duplicate)",
					name, d, time.UnixMilli(int64(run[i-1]*1000)).Format(time.TimeOnly), time.UnixMilli(int64(run[i]*1000)).Format(time.TimeOnly))
			}
		}
	}
	t.Logf("%d series, points expected %d, received %d (outage %s at %s, collector down %s from %s)",
		len(got), expected, received, outageFor, outage.Sub(start1).Round(time.Second), up.Sub(down).Round(time.Millisecond), down.Sub(start1).Round(time.Second))
	assert.InDelta(t, expected, received, float64(2*len(got)), "every collected point once")
	// A request Prometheus took just before it stopped, sent again from the log, is refused as out
	// of order: harmless (its points are in), and rare; the counts above are what decides.
	t.Logf("requests refused as out of order: %d", strings.Count(logs.String(), "out of order sample"))
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
	q := fmt.Sprintf("%s[%ds]", selector, window)
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q) +
		"&time=" + strconv.FormatFloat(float64(to.UnixMilli())/1000, 'f', 3, 64))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Values [][2]any          `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(body, &r), "%s", body)
	require.Equal(t, "success", r.Status, "query %s: %s", q, r.Error)
	out := map[string][]float64{}
	for _, s := range r.Data.Result {
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

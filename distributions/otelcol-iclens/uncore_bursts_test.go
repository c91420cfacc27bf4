package otelcoliclens_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
)

// TestCollectorServesUncoreBursts: the built collector replays a cpuuncore recording of the SKX
// fixture (receiver/cpuuncorereceiver/testdata/skx: uncore_imc_0..5 on CPUs 0 and 28, cas_count_read
// 0x304 and cas_count_write 0xc04 of uncore_snbep.c, 64 B a CAS) whose samples carry the fast
// sampler's passes every 10 ms (internal/recording/FORMAT.md, PerfSample.bursts): socket 0's host
// memory reads come in the JANOG step, 40 ms at 100 GB/s every 600 ms, which a 1 s average shows as
// 6.7 GB/s. The collector serves cpuuncore.burst.peak_rate at the bursts' rate, and the view
// draws it beside host memory's average (exporter/lensviewexporter README, "Bursts inside the
// interval"). On main the cpuuncore receiver had no fast sampler and served no peak.
func TestCollectorServesUncoreBursts(t *testing.T) {
	bin := collectorBinary(t)
	const (
		rate = 100e9
		cas  = 64.0
	)
	casAt := func(e time.Duration) uint64 {
		burst, every := 40*time.Millisecond, 600*time.Millisecond
		return uint64(rate * (time.Duration(e/every)*burst + min(e%every, burst)).Seconds() / cas)
	}
	type event struct {
		pmu    string
		cpu    int
		config uint64
	}
	var events []event
	for i := range 6 {
		for _, cpu := range []int{0, 28} {
			for _, c := range []uint64{0x304, 0xc04} {
				events = append(events, event{fmt.Sprintf("uncore_imc_%d", i), cpu, c})
			}
		}
	}
	bursty := event{"uncore_imc_0", 0, 0x304}
	value := func(e event, at time.Duration) uint64 {
		if e == bursty {
			return casAt(at)
		}
		return 0
	}

	tree, err := recording.Snapshot(filepath.Join("..", "..", "receiver", "cpuuncorereceiver", "testdata", "skx"), []string{"sys", "proc"}, nil)
	require.NoError(t, err)
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	rec := filepath.Join(t.TempDir(), "skx-cpuuncore.jsonl")
	w, err := recording.Create(rec, recording.Header{Receiver: "cpuuncore", Host: "skx", Created: start,
		Interval: recording.Duration(time.Second), Note: "JANOG step on socket 0's host memory"})
	require.NoError(t, err)
	require.NoError(t, w.Write(recording.Record{Time: start, Tree: tree}))
	const samples = 4
	for i := 1; i <= samples; i++ {
		at := time.Duration(i) * time.Second
		var s recording.PerfSample
		for _, e := range events {
			ns := uint64(at)
			s.Perf = append(s.Perf, recording.PerfReading{CPU: e.cpu, PMU: e.pmu, Config: e.config, Value: value(e, at), Enabled: ns, Running: ns})
		}
		s.Bursts = &recording.SubSamples{Period: recording.Duration(10 * time.Millisecond)}
		for p := at - time.Second + 10*time.Millisecond; p <= at; p += 10 * time.Millisecond {
			pass := map[string]uint64{}
			for _, e := range events {
				pass[fmt.Sprintf("%s@%d:%#x:0x0:0x0", e.pmu, e.cpu, e.config)] = value(e, p)
			}
			s.Bursts.Add(start.Add(p), pass)
		}
		b, err := json.Marshal(s)
		require.NoError(t, err)
		require.NoError(t, w.Write(recording.Record{Time: start.Add(at), Sample: b}))
	}
	require.NoError(t, w.Close())

	addr, view := freeAddr(t), freeAddr(t)
	logs := startCollector(t, bin, fmt.Sprintf(`
receivers:
  cpuuncore:
    collection_interval: 1s
    initial_delay: 0s
    pcie: {enabled: false}
    recording: {replay: %s}
exporters:
  prometheus:
    endpoint: %s
  lensview:
    endpoint: %s
service:
  pipelines:
    metrics: {receivers: [cpuuncore], exporters: [prometheus, lensview]}
  telemetry: {metrics: {level: none}}
`, rec, addr, view))
	// The series settle at the last sample (see writeUncoreRecording): 4 s of the step.
	body := scrapeUntil(t, addr, []string{
		fmt.Sprintf(`interconnect_io_bytes_total{component="cpu_memory",device="socket0/imc",direction="read"} %d`, casAt(samples*time.Second)*cas),
	})
	peak := sampleValues(body, "cpuuncore_burst_peak_rate_bytes_per_second", `device="socket0/imc"`, `direction="read"`, `burst_window="10ms"`)
	require.Len(t, peak, 1, "cpuuncore.burst.peak_rate of socket0/imc reads")
	assert.InEpsilon(t, rate, peak[0], 0.05, "the peak of the bursts, not their 1 s average")
	writes := sampleValues(body, "cpuuncore_burst_peak_rate_bytes_per_second", `device="socket0/imc"`, `direction="write"`)
	assert.Equal(t, []float64{0}, writes, "the writes have their peak too, at 0")
	assert.NotContains(t, logs.String(), "Cannot use part of the uncore", "every opened event was recorded")

	// The view: one peak line for host memory's reads, the busiest controller's, at the bursts' rate.
	label := "CPU MEM[RD] peak/10ms (busiest device)"
	var line viewLine
	deadline := time.Now().Add(waitServed)
	for {
		var ok bool
		if line, ok = nodeViewLine(t, view, label); ok && len(line.V) > 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the view has no %q with points within %s", label, waitServed)
		time.Sleep(200 * time.Millisecond)
	}
	assert.Equal(t, "peak", line.Kind)
	assert.InEpsilon(t, rate, line.V[len(line.V)-1], 0.05, "the view draws the peak, not the average")
}

// viewLine is a line of a node's chart as the view's /api/node serves it.
type viewLine struct {
	Label string    `json:"label"`
	Kind  string    `json:"kind"`
	V     []float64 `json:"v"`
}

// nodeViewLine returns the line labelled label of the first node the view at addr knows; ok is
// false while the view has no node or the node no such line.
func nodeViewLine(t *testing.T, addr, label string) (viewLine, bool) {
	t.Helper()
	var nodes []struct {
		Name string `json:"name"`
	}
	if !getJSON("http://"+addr+"/api/nodes", &nodes) || len(nodes) == 0 {
		return viewLine{}, false
	}
	var node struct {
		Series []viewLine `json:"series"`
	}
	if !getJSON("http://"+addr+"/api/node?name="+url.QueryEscape(nodes[0].Name), &node) {
		return viewLine{}, false
	}
	for _, l := range node.Series {
		if l.Label == label {
			return l, true
		}
	}
	return viewLine{}, false
}

// getJSON decodes what u answers with 200; false on any failure (not up yet).
func getJSON(u string, v any) bool {
	resp, err := http.Get(u)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(v) == nil
}

package otelcoliclens_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/internal/syncbuf"
	"github.com/otelcol-iclens/otelcol-iclens/tools/dashboard"
	"github.com/otelcol-iclens/otelcol-iclens/tools/simulate"
)

// prometheusBinary finds a Prometheus server (Debian's `prometheus` package, which .ci/run
// installs). Outside CI a machine without one skips the test and says how to get it.
func prometheusBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PROMETHEUS"); p != "" {
		return p
	}
	p, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("prometheus is not installed; .ci/run installs Debian's prometheus package")
		}
		t.Skip("no prometheus binary: apt-get install prometheus (or set PROMETHEUS) to run the end-to-end test")
	}
	return p
}

// startPrometheus runs a Prometheus that accepts remote write, with its own storage, on loopback,
// evaluating the rule files every second.
func startPrometheus(t *testing.T, ruleFiles ...string) string {
	t.Helper()
	return newPrometheus(t, ruleFiles...).addr
}

// prometheusServer is a Prometheus that a test can stop and start again on the same address and
// storage, as an outage of the backend.
type prometheusServer struct {
	bin, dir, addr string
	logs           *syncbuf.Buffer
	cmd            *exec.Cmd
}

// newPrometheus starts a Prometheus, evaluating the rule files every second, and stops it at the
// end of the test.
func newPrometheus(t *testing.T, ruleFiles ...string) *prometheusServer {
	t.Helper()
	p := &prometheusServer{bin: prometheusBinary(t), dir: t.TempDir(), addr: freeAddr(t), logs: &syncbuf.Buffer{}}
	conf := "global:\n  scrape_interval: 15s\n  evaluation_interval: 1s\n"
	if len(ruleFiles) > 0 {
		conf += "rule_files: [" + strings.Join(ruleFiles, ", ") + "]\n"
	}
	require.NoError(t, os.WriteFile(filepath.Join(p.dir, "prometheus.yml"), []byte(conf), 0o644))
	t.Cleanup(func() {
		if p.cmd != nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("prometheus log:\n%s", p.logs.String())
		}
	})
	p.start(t)
	return p
}

// start runs the server and waits until it is ready.
func (p *prometheusServer) start(t *testing.T) {
	t.Helper()
	p.cmd = exec.Command(p.bin, "--config.file="+filepath.Join(p.dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(p.dir, "data"),
		"--web.listen-address="+p.addr, "--web.enable-remote-write-receiver")
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	require.NoError(t, p.cmd.Start())
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + p.addr + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 200*time.Millisecond, "prometheus did not become ready")
}

// stop shuts the server down cleanly (SIGTERM), as an operator's restart or a crash-free outage.
func (p *prometheusServer) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	_ = p.cmd.Wait()
	p.cmd = nil
}

// promQuery runs an instant query and returns each series' labels and value.
func promQuery(t *testing.T, addr, q string) []promSample {
	t.Helper()
	var out []promSample
	for _, s := range promAPIQuery(t, addr, q, time.Time{}) {
		v, err := strconv.ParseFloat(s.Value[1].(string), 64)
		require.NoError(t, err)
		out = append(out, promSample{labels: s.Metric, value: v})
	}
	return out
}

// promResult is one series of a query's answer: an instant vector's value, or a range vector's
// values.
type promResult struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
	Values [][2]any          `json:"values"`
}

// promAPIQuery runs q through Prometheus' HTTP API at time at (now where zero) and returns the
// series of its answer.
func promAPIQuery(t *testing.T, addr, q string, at time.Time) []promResult {
	t.Helper()
	u := "http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q)
	if !at.IsZero() {
		u += "&time=" + strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)
	}
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string       `json:"resultType"`
			Result     []promResult `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(body, &r), "%s", body)
	require.Equal(t, "success", r.Status, "query %s: %s", q, r.Error)
	return r.Data.Result
}

type promSample struct {
	labels map[string]string
	value  float64
}

// rates returns bytes/s by "component direction" for one node over the last window.
func rates(t *testing.T, addr, host string) map[string]float64 {
	out := map[string]float64{}
	q := fmt.Sprintf(`sum by (component, direction) (rate(interconnect_io_bytes_total{host_name=%q}[20s]))`, host)
	for _, s := range promQuery(t, addr, q) {
		out[s.labels["component"]+" "+s.labels["direction"]] = s.value
	}
	return out
}

// bytesPerSample is the mean increase between consecutive stored samples of the counters that
// selector selects over the last 20 s, summed over the series: a rate counted in samples, which
// a replay (one recorded interval a scrape) keeps exact however late a busy machine scrapes.
func bytesPerSample(t *testing.T, addr, selector string) float64 {
	t.Helper()
	res := promAPIQuery(t, addr, selector+"[20s]", time.Time{})
	require.NotEmpty(t, res, "no samples of %s", selector)
	var sum float64
	for _, s := range res {
		require.GreaterOrEqual(t, len(s.Values), 5, "%s %v: too few samples", selector, s.Metric)
		first, err := strconv.ParseFloat(s.Values[0][1].(string), 64)
		require.NoError(t, err)
		last, err := strconv.ParseFloat(s.Values[len(s.Values)-1][1].(string), 64)
		require.NoError(t, err)
		require.GreaterOrEqual(t, last, first, "%s %v: the counter went back within the window", selector, s.Metric)
		sum += (last - first) / float64(len(s.Values)-1)
	}
	return sum
}

// TestCasesInPrometheus is the whole pipeline: the simulator's recordings of every case, replayed
// by the built collector (rnic, cpuuncore and gpu receivers, the diagnosis connector), pushed
// with Prometheus remote write into a real Prometheus, and queried back. Each of the paper's
// cases must show its signature (internal/scenario, each case's Note); TestDiagnosisInPrometheus judges the verdicts on
// every case.
func TestCasesInPrometheus(t *testing.T) {
	t.Parallel() // replayed in real time and waited for in Prometheus: the clock, not the CPU (Makefile E2E_PARALLEL)
	bin := collectorBinary(t)
	dir := t.TempDir()
	prom := startPrometheus(t)

	fixture := filepath.Join("..", "..", "receiver", "cpuuncorereceiver", "testdata", "skx")
	_, err := simulate.Write(simulate.Options{Dir: dir, Interval: time.Second, Samples: 60, UncoreFixture: fixture})
	require.NoError(t, err)
	cfg, err := simulate.CollectorConfigFor(dir, time.Second, simulate.ExportRemoteWrite, paperCases())
	require.NoError(t, err)
	cfgPath := filepath.Join(dir, "otelcol.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
	logs := startCollectorWith(t, bin, cfgPath, []string{"ICLENS_REMOTE_WRITE_URL=http://" + prom + "/api/v1/write"})

	// Enough replayed seconds for a 20 s rate window on every node.
	host := func(c, node string) string {
		for _, cs := range scenario.Cases() {
			if cs.Name == c {
				return scenario.HostName(cs, node)
			}
		}
		t.Fatalf("no case %s", c)
		return ""
	}
	// The receivers of 14 nodes start seconds apart on a busy machine, and rate() over a window
	// that a series covers only in part extrapolates half an interval past its first point at
	// most, so it reads low (beside stress-ng the TCP fallback's netdev read 1.3 GB/s, under the
	// 1.5 asserted, when only pfc_storm-node2 was waited for): wait until the last receiver of
	// every node to start has served 22 s.
	nodes := 2 * len(paperCases())
	covered := 0.0
	if !assert.Eventually(t, func() bool {
		n := promQuery(t, prom, `count(count by (host_name) (interconnect_io_bytes_total))`)
		since := promQuery(t, prom, `time() - max(min by (host_name, component) (min_over_time(timestamp(interconnect_io_bytes_total)[2m:1s])))`)
		if len(n) == 0 || len(since) == 0 || int(n[0].value) < nodes {
			return false
		}
		covered = since[0].value
		return covered >= 22
	}, 3*time.Minute, time.Second, "replayed data of every node did not reach Prometheus") {
		t.Fatalf("the last receiver to start has served %.0f s", covered)
	}

	const busy, idle = 1.5e9, 0.3e9
	h := rates(t, prom, host("healthy_allreduce", "node1"))
	assert.Greater(t, h["rnic transmit"], busy, "healthy: RNIC busy")
	assert.Greater(t, h["gpu_pcie transmit"], busy, "healthy: GPU PCIe busy")
	assert.Less(t, h["cpu_pcie receive"], idle, "healthy: CPU PCIe idle")
	assert.Less(t, h["netdev transmit"], idle, "healthy: no IP traffic")
	assert.Less(t, h["cpu_memory write"], busy, "healthy: host memory near idle")

	fb := rates(t, prom, host("tcp_fallback", "node1"))
	assert.Less(t, fb["rnic transmit"], idle, "TCP fallback: RNIC idle")
	assert.Greater(t, fb["netdev transmit"], busy, "TCP fallback: netdev busy")
	assert.Greater(t, fb["cpu_memory read"], 3*busy, "TCP fallback: host memory busy")
	assert.Greater(t, fb["cpu_pcie receive"], busy, "TCP fallback: CPU PCIe busy")

	b := rates(t, prom, host("gdr_bounce", "node1"))
	assert.Greater(t, b["rnic transmit"], busy, "bounce: RNIC busy")
	assert.Greater(t, b["cpu_memory write"], busy, "bounce: host memory busy too")
	assert.Greater(t, b["cpu_pcie receive"], busy, "bounce: CPU PCIe busy too")

	cg := rates(t, prom, host("congestion_20g", "node1"))
	// A replay advances one recorded second per scrape, whenever the scrape runs: on a loaded
	// machine a late scrape stretches one interval, and rate() over wall-clock timestamps moves by
	// a few percent. The port's rate is asserted per sample instead (bytes between consecutive
	// samples over the recording's one-second interval); the wall-clock rate only loosely.
	perSample := bytesPerSample(t, prom, fmt.Sprintf(
		`interconnect_io_bytes_total{host_name=%q,component="rnic",direction="transmit"}`, host("congestion_20g", "node1")))
	t.Logf("congestion: RNIC TX %.4g B a recorded second, %.4g B/s by rate()", perSample, cg["rnic transmit"])
	assert.InEpsilon(t, scenario.CongestedRate, perSample, 0.01, "congestion: RNIC TX at the 20 Gb/s port's 2.47 GB/s per recorded second")
	assert.InEpsilon(t, scenario.CongestedRate, cg["rnic transmit"], 0.15, "congestion: RNIC TX near 2.47 GB/s on the wall clock")
	assert.Less(t, cg["cpu_memory write"], busy, "congestion: no host-side load")
	cnp := promQuery(t, prom, fmt.Sprintf(`sum(rate(rnic_roce_cnp_total{host_name=%q}[20s]))`, host("congestion_20g", "node1")))
	require.NotEmpty(t, cnp)
	assert.Greater(t, cnp[0].value, 1000.0, "congestion: CNPs rising")

	down := promQuery(t, prom, fmt.Sprintf(`rnic_port_rate_bytes_per_second{host_name=%q}`, host("link_downgrade", "node1")))
	require.NotEmpty(t, down)
	assert.Equal(t, 50e9/8, down[0].value, "link trained down to 50 Gb/s")

	pause := promQuery(t, prom, fmt.Sprintf(`sum(rate(rnic_pfc_pause_frames_total{host_name=%q,direction="receive"}[20s]))`, host("pfc_storm", "node1")))
	require.NotEmpty(t, pause)
	assert.Greater(t, pause[0].value, 1e4, "PFC storm: pause frames")

	ready := promQuery(t, prom, fmt.Sprintf(`rnic_topology_gpudirect_ready{host_name=%q}`, host("gdr_bounce", "node1")))
	require.NotEmpty(t, ready)
	assert.Equal(t, 0.0, ready[0].value, "bounce: the topology says why before any traffic")

	// Every query of the generated dashboard returns data for at least one simulated node, but
	// for those whose metrics only hardware or sources the simulated ConnectX-6 cluster lacks
	// emit: Prometheus still parses and runs them here (a broken query fails promQuery), and the
	// end-to-end test named beside each metric serves it from its own fixture.
	queries, err := dashboard.Queries()
	require.NoError(t, err)
	for _, q := range queries {
		expr := q.Resolve("", "20s")
		got := promQuery(t, prom, expr)
		if elsewhere := servedElsewhere(expr); elsewhere != "" && len(got) == 0 {
			t.Logf("dashboard panel %q query %s: no simulated case emits it; served by %s", q.Panel, q.RefID, elsewhere)
			continue
		}
		assert.NotEmpty(t, got, "dashboard panel %q query %s returns nothing in any case: %s", q.Panel, q.RefID, expr)
	}

	assert.NotContains(t, logs.String(), "\terror\t")
}

// paperCases are the cases of the paper (internal/scenario) that TestCasesInPrometheus checks the signatures of (the
// simulator's first seven; the others are the diagnosis's).
func paperCases() []scenario.Case {
	var out []scenario.Case
	for _, c := range scenario.Cases() {
		switch c.Name {
		case "healthy_allreduce", "healthy_broadcast", "tcp_fallback", "gdr_bounce", "congestion_20g", "link_downgrade", "pfc_storm":
			out = append(out, c)
		}
	}
	return out
}

// metricsServedElsewhere are the metrics that no simulated case emits, with the end-to-end test
// that serves each from a fixture of the hardware or source that has it.
var metricsServedElsewhere = []struct{ prefix, test string }{
	{"rnic_operation_io_bytes_total", "TestCollectorServesFleets (AWS EFA, efa_verbs.c)"},
	{"rnic_pfc_pause_transitions_total", "TestCollectorServesFleets (Broadcom bnxt_en)"},
	{"nccl_", "TestCollectorServesNCCL (NCCL Inspector dumps and RAS)"},
	{"interconnect_owner", "TestOwnerJoinInPrometheus (Slurm mapping directory, pod-resources)"},
	{"rnic_burst_", "TestBurstsThroughCollector (the bursty case: recorded sub-interval samples)"},
	{"cpuuncore_burst_", "TestCollectorServesUncoreBursts (a cpuuncore recording with 10 ms passes)"},
	{"gpu_burst_", "TestCollectorGPUNVMLBursts (the fake libnvidia-ml's PCIe bursts, and the view's line)"},
}

// servedElsewhere names the test that serves a query's metric where the query reads one of
// metricsServedElsewhere, and "" where it reads only metrics the simulated cases emit.
func servedElsewhere(expr string) string {
	for _, m := range metricsServedElsewhere {
		if strings.Contains(expr, m.prefix) {
			return m.test
		}
	}
	return ""
}

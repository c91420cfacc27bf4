package otelcoliclens_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/fakeras"
	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/tools/simulate"
)

// e2eNCCLCases are the NCCL cases whose collectives a static dump can show: the steady ones (the
// dumps are written before the collector starts and read at once, so a transition's records
// would all arrive at the first scrape), and the rank that dies, its RAS service answering with
// the dead rank from the start.
var e2eNCCLCases = map[string]bool{"nccl_healthy_allreduce": true, "nccl_compute_only": true, "nccl_tcp_fallback": true,
	"nccl_congestion_20g": true, "nccl_slow_no_hardware_cause": true, "nccl_rank_dies": true, "nccl_trained_down_at_boot": true,
	"nccl_straggler": true}

// TestCollectiveVerdictsInPrometheus replays the NCCL cases through the built collector (the rnic,
// cpuuncore and gpu replays, a nccl receiver per case on the simulator's Inspector dumps, a RAS
// service per node of nccl_rank_dies on loopback) into the real Prometheus with the generated
// rules. On every node both evaluators (the connector's diagnosis_verdict and the rules' ALERTS)
// raise the case's collective verdicts, and the cross-node ones (the healthy node of a ring whose
// peer's port trained down waits on it; the straggler, and the node that waits on it), within
// startLimit of the evaluations after the case's receivers all served (counted in the
// evaluator's own evaluations, not in seconds), keep them to the end, and raise none on the
// other cases.
func TestCollectiveVerdictsInPrometheus(t *testing.T) {
	t.Parallel() // replayed in real time and waited for in Prometheus: the clock, not the CPU (Makefile E2E_PARALLEL)
	bin := collectorBinary(t)
	dir := t.TempDir()
	prom := startPrometheus(t, diagnosisRules(t, dir, time.Second))
	fixture := filepath.Join("..", "..", "receiver", "cpuuncorereceiver", "testdata", "skx")
	var cases []scenario.Case
	for _, c := range scenario.NCCLCases() {
		if e2eNCCLCases[c.Name] {
			cases = append(cases, c)
		}
	}
	require.Len(t, cases, len(e2eNCCLCases))
	const samples = 40
	o := simulate.Options{Dir: dir, Interval: time.Second, Samples: samples, UncoreFixture: fixture}
	_, err := simulate.WriteCases(o, cases)
	require.NoError(t, err)
	_, err = simulate.WriteNCCL(o)
	require.NoError(t, err)
	src := simulate.NCCLSources{Cases: e2eNCCLCases, RAS: map[string]string{}}
	for _, c := range cases {
		if c.Name != "nccl_rank_dies" {
			continue
		}
		for _, node := range scenario.Nodes {
			ras, err := fakeras.Listen("127.0.0.1:0", "")
			require.NoError(t, err)
			t.Cleanup(func() { ras.Close() })
			ras.Set(simulate.RASStatus(c, scenario.TransitionFault, time.Second))
			src.RAS[scenario.HostName(c, node)] = ras.Addr()
		}
	}
	cfg, err := simulate.CollectorConfigWithNCCL(dir, time.Second, simulate.ExportRemoteWrite, cases, src)
	require.NoError(t, err)
	cfgPath := filepath.Join(dir, "otelcol.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
	started := time.Now()
	logs := startCollectorWith(t, bin, cfgPath, []string{"ICLENS_REMOTE_WRITE_URL=http://" + prom + "/api/v1/write"})

	// Each node evaluated 30 times by both evaluators, counted since the collector started.
	const evaluations = 30
	queries := []string{`count_over_time(diagnosis_verdict_ratio{verdict="idle",device=""}%s)`, `count_over_time(iclens_diagnosis:rdma_bytes%s)`}
	least := func() (string, float64) {
		// The node with the fewest evaluations in either evaluator, and how many.
		host, n := "no node", 0.0
		for _, q := range queries {
			got := promQuery(t, prom, fmt.Sprintf(q, windowSince(prom, started).rng))
			if len(got) < 2*len(cases) {
				return fmt.Sprintf("%d of %d nodes", len(got), 2*len(cases)), 0
			}
			for _, s := range got {
				if host == "no node" || s.value < n {
					host, n = s.labels["host_name"], s.value
				}
			}
		}
		return host, n
	}
	if !assert.Eventually(t, func() bool { _, n := least(); return n >= evaluations }, 4*time.Minute, time.Second,
		"every node evaluated %d times by the connector and the rules", evaluations) {
		host, n := least()
		t.Fatalf("the least evaluated: %s, %.0f times", host, n)
	}

	// Counted from the evaluation after the last of a case's receivers served its first point
	// (sourcesReady): on a busy machine the receivers of one node start seconds apart, and a
	// verdict cannot be raised before the bytes and the collectives it joins both arrive. From
	// there: the rnic's first rate at its second sample, the gpu's at its third, then hold.
	const startLimit = 10
	// Every query below reads one window, from before the collector started to now.
	w := windowSince(prom, started)
	ready := map[string]float64{} // case -> when its last source served its first point (ms)
	for _, c := range cases {
		for _, node := range scenario.Nodes {
			ready[c.Name] = max(ready[c.Name], sourcesReady(t, w, scenario.HostName(c, node)))
		}
	}
	var report []string
	for _, ev := range []struct{ name, clock, verdicts, value string }{
		{"connector", `diagnosis_verdict_ratio{verdict="idle",device=""}`, `diagnosis_verdict_ratio{verdict=~"collective_.*|straggler|waits_on_peer"}`, "1"},
		{"prometheus", `iclens_diagnosis:rdma_bytes`, `ALERTS{alertstate="firing",verdict=~"collective_.*|straggler|waits_on_peer"}`, ""},
	} {
		clock := map[string][]float64{} // host -> evaluation times (ms)
		for _, s := range w.series(t, ev.clock) {
			for _, p := range s.points {
				clock[s.labels["host_name"]] = append(clock[s.labels["host_name"]], p[0])
			}
		}
		raised := map[string]map[string][]float64{} // host -> verdict@device -> times it held
		for _, s := range w.series(t, ev.verdicts) {
			h := s.labels["host_name"]
			if raised[h] == nil {
				raised[h] = map[string][]float64{}
			}
			k := s.labels["verdict"] + "@" + s.labels["device"]
			for _, p := range s.points {
				if p[1] == 1 {
					raised[h][k] = append(raised[h][k], p[0])
				}
			}
		}
		for _, c := range cases {
			for n, node := range scenario.Nodes {
				host := scenario.HostName(c, node)
				times := clock[host]
				sort.Float64s(times)
				require.GreaterOrEqual(t, len(times), evaluations, "%s %s", ev.name, host)
				var want []string
				// The last phase's: the steady cases have one, and nccl_rank_dies' RAS service
				// answers with its rank dead from the start.
				for _, e := range c.Phases[len(c.Phases)-1].Expect[n] {
					if strings.HasPrefix(e, scenario.CollectiveSlow) || strings.HasPrefix(e, scenario.CollectiveStalled) || strings.HasPrefix(e, scenario.WaitsOnPeer) ||
						strings.HasPrefix(e, scenario.Straggler) {
						want = append(want, e)
					}
				}
				for k := range raised[host] {
					assert.Contains(t, want, k, "%s %s raised %s", ev.name, host, k)
				}
				for _, w := range want {
					held := raised[host][w]
					if !assert.NotEmpty(t, held, "%s %s: %s never raised", ev.name, host, w) {
						continue
					}
					raisedAt := sort.SearchFloat64s(times, held[0])
					// Evaluations until it held, from the first after the case's sources were all there.
					first := raisedAt - sort.Search(len(times), func(i int) bool { return times[i] > ready[c.Name] }) + 1
					assert.LessOrEqual(t, first, startLimit, "%s %s: %s raised at evaluation %d after its sources were ready", ev.name, host, w, first)
					// Held at every evaluation from then on (a sample a second for ALERTS).
					after := len(times) - raisedAt
					assert.GreaterOrEqual(t, len(held), after-2, "%s %s: %s held at %d of the %d evaluations since", ev.name, host, w, len(held), after)
					report = append(report, fmt.Sprintf("%-10s %-36s %s at evaluation %d (%d after its sources were ready), held %d of %d",
						ev.name, host, w, raisedAt+1, first, len(held), after))
				}
			}
		}
	}
	t.Logf("collective verdicts (evaluations from each evaluator's first of the node, and from the first after the case's receivers all served, negative where raised before; 1 s interval):\n%s", strings.Join(report, "\n"))

	// The operator's sentences name the collective and what explains it.
	out := logs.String()
	fb, _ := scenario.Named("nccl_tcp_fallback")
	dies, _ := scenario.Named("nccl_rank_dies")
	assert.Contains(t, out, "nccl_tcp_fallback-node1: AllReduce on comm "+scenario.CommID(fb)+" at 2.8 GB/s bus bandwidth")
	assert.Contains(t, out, ": NCCL is on TCP (RDMA 0 B/s, ens1f0np0")
	assert.Contains(t, out, "nccl_slow_no_hardware_cause-node1: AllReduce on comm")
	assert.Contains(t, out, "of what mlx5_0/1 can carry (12.5 GB/s): the hardware looks healthy")
	assert.Contains(t, out, "nccl_rank_dies-node1: NCCL communicator "+scenario.CommID(dies)+" is stalled: RAS reports 1 dead of its 2 ranks")
	st, _ := scenario.Named("nccl_straggler")
	assert.Contains(t, out, "nccl_straggler-node1: the straggler of NCCL communicator "+scenario.CommID(st)+": its AllReduce ran at 11.5 GB/s bus bandwidth")
	// The cross-node sentence names the peer, the group they share and the peer's fault.
	boot, _ := scenario.Named("nccl_trained_down_at_boot")
	assert.Contains(t, out, "nccl_trained_down_at_boot-node2 waits on nccl_trained_down_at_boot-node1 (NCCL communicator "+scenario.CommID(boot)+
		"): nccl_trained_down_at_boot-node1's mlx5_0/1 runs below its capability (link_degraded)")
}

// sourcesReady is when the last of one node's receivers (rnic, cpuuncore, gpu, and nccl where
// the case has collectives) served its first point in the window, in ms: the replayed points
// carry their samples' times on each receiver's replay clock, which starts at its first scrape.
func sourcesReady(t *testing.T, w promWindow, host string) float64 {
	t.Helper()
	ready := 0.0
	for _, src := range []struct {
		q        string
		required bool
	}{
		{`interconnect_io_bytes_total{host_name=%q,component="rnic",direction="transmit"}`, true},
		{`interconnect_io_bytes_total{host_name=%q,component="cpu_memory",device="socket0/imc",direction="read"}`, true},
		{`gpu_pcie_link_width{host_name=%q}`, true},
		{`{__name__=~"nccl_.+",host_name=%q}`, false}, // nccl_compute_only runs no collective
	} {
		first := math.Inf(1)
		for _, s := range w.series(t, fmt.Sprintf(src.q, host)) {
			if len(s.points) > 0 {
				first = min(first, s.points[0][0])
			}
		}
		if math.IsInf(first, 1) {
			require.False(t, src.required, "%s: nothing from %s", host, src.q)
			continue
		}
		ready = max(ready, first)
	}
	return ready
}

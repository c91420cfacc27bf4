package otelcoliclens_test

import (
	"fmt"
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
// StartLimit of their first evaluation, counted in their own evaluations, keep them to the end,
// and raise none on the other cases.
func TestCollectiveVerdictsInPrometheus(t *testing.T) {
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
	logs := startCollectorWith(t, bin, cfgPath, []string{"ICLENS_REMOTE_WRITE_URL=http://" + prom + "/api/v1/write"})

	// Each node evaluated 30 times by both evaluators.
	const evaluations = 30
	require.Eventually(t, func() bool {
		a := promQuery(t, prom, `count(count_over_time(diagnosis_verdict_ratio{verdict="idle",device=""}[5m]) >= 30)`)
		b := promQuery(t, prom, `count(count_over_time(iclens_diagnosis:rdma_bytes[5m]) >= 30)`)
		return len(a) > 0 && len(b) > 0 && a[0].value >= float64(2*len(cases)) && b[0].value >= float64(2*len(cases))
	}, 4*time.Minute, time.Second, "every node evaluated %d times by the connector and the rules", evaluations)

	const startLimit = 10 // as TestDiagnosisInPrometheus: receivers starting out of step on a busy machine
	lookback := "[5m]"
	var report []string
	for _, ev := range []struct{ name, clock, verdicts, value string }{
		{"connector", `diagnosis_verdict_ratio{verdict="idle",device=""}`, `diagnosis_verdict_ratio{verdict=~"collective_.*|straggler|waits_on_peer"}`, "1"},
		{"prometheus", `iclens_diagnosis:rdma_bytes`, `ALERTS{alertstate="firing",verdict=~"collective_.*|straggler|waits_on_peer"}`, ""},
	} {
		clock := map[string][]float64{} // host -> evaluation times (ms)
		for _, s := range promSeriesSamples(t, prom, ev.clock+lookback) {
			for _, p := range s.points {
				clock[s.labels["host_name"]] = append(clock[s.labels["host_name"]], p[0])
			}
		}
		raised := map[string]map[string][]float64{} // host -> verdict@device -> times it held
		for _, s := range promSeriesSamples(t, prom, ev.verdicts+lookback) {
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
					first := sort.SearchFloat64s(times, held[0]) + 1 // evaluations until it held
					assert.LessOrEqual(t, first, startLimit, "%s %s: %s raised at evaluation %d", ev.name, host, w, first)
					// Held at every evaluation from then on (a sample a second for ALERTS).
					after := len(times) - (first - 1)
					assert.GreaterOrEqual(t, len(held), after-2, "%s %s: %s held at %d of the %d evaluations since", ev.name, host, w, len(held), after)
					report = append(report, fmt.Sprintf("%-10s %-36s %s at evaluation %d, held %d of %d", ev.name, host, w, first, len(held), after))
				}
			}
		}
	}
	t.Logf("collective verdicts (evaluations from each evaluator's first of the node; 1 s interval):\n%s", strings.Join(report, "\n"))

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

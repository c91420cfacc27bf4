package diagnosisconnector

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// collectiveSentences runs node n of case name and returns the bodies of its collective verdicts'
// log records.
func collectiveSentences(t *testing.T, name string, n, samples int) []string {
	t.Helper()
	c := caseNamed(t, name)
	e := newTestEngine(t, testConfig())
	_, logs := run(t, e, c, n, samples)
	var out []string
	for _, lr := range records(logs) {
		v, _ := lr.Attributes().Get(verdict.AttrVerdict)
		if v.Str() == verdict.CollectiveSlow || v.Str() == verdict.CollectiveStalled {
			out = append(out, lr.Body().Str())
		}
	}
	return out
}

// TestCollectiveSlowNamesItsCause: the slow collective's sentence names the communicator, its
// bus bandwidth, its share of what the port carries and the component that explains it (the node's
// verdict), or says the hardware looks healthy when nothing on the node explains it.
func TestCollectiveSlowNamesItsCause(t *testing.T) {
	fb := caseNamed(t, "nccl_transition_tcp_fallback")
	got := collectiveSentences(t, fb.Name, 0, scenario.TransitionSamples)
	require.Len(t, got, 1, "raised once, when the fallback began")
	assert.Contains(t, got[0], "nccl_transition_tcp_fallback-node1: AllReduce on comm "+scenario.CommID(fb)+" (gpu0) at 2.8 GB/s bus bandwidth, 22 % of what mlx5_0/1 can carry (12.5 GB/s): NCCL is on TCP (RDMA 0 B/s, ens1f0np0 ")

	slow := caseNamed(t, "nccl_slow_no_hardware_cause")
	got = collectiveSentences(t, slow.Name, 1, 30)
	require.Len(t, got, 1)
	assert.Contains(t, got[0], "AllReduce on comm "+scenario.CommID(slow)+" (gpu0) at 4.0 GB/s bus bandwidth, 32 % of what mlx5_0/1 can carry (12.5 GB/s): the hardware looks healthy")

	cg := caseNamed(t, "nccl_congestion_20g")
	got = collectiveSentences(t, cg.Name, 0, 30)
	require.Len(t, got, 1)
	assert.Contains(t, got[0], ": the fabric is congested")
}

// TestCollectiveStalledSaysWhichRanks: a rank RAS reports dead stalls the communicator within 2
// intervals, and the sentence says so.
func TestCollectiveStalledSaysWhichRanks(t *testing.T) {
	c := caseNamed(t, "nccl_rank_dies")
	got := collectiveSentences(t, c.Name, 0, scenario.TransitionFault+10)
	require.Len(t, got, 1)
	assert.Contains(t, got[0], "NCCL communicator "+scenario.CommID(c)+" is stalled: RAS reports 1 dead of its 2 ranks")
}

// TestSeriesPerCommunicator measures what a communicator costs the connector's memory of a node:
// per rank on the node, collective type and message-size bucket the two Inspector series it reads
// (nccl.collective.samples, last_bus_bandwidth), and from RAS the 8 rank states and a lowest and
// highest count per collective type: 2 + 8 + 2 = 12 for the simulated job (one rank a node, one
// collective type, one bucket).
func TestSeriesPerCommunicator(t *testing.T) {
	seriesOf := func(name string) int {
		c := caseNamed(t, name)
		e := newTestEngine(t, testConfig())
		run(t, e, c, 0, 10)
		return e.nodes[scenario.HostName(c, scenario.Nodes[0])].Series()
	}
	without, with := seriesOf("healthy_allreduce"), seriesOf("nccl_healthy_allreduce")
	t.Logf("series of a node: %d without its NCCL job, %d with one communicator", without, with)
	assert.Equal(t, 12, with-without)
}

// TestSlowCollectiveNeedsAnEnabledExplanation: with tcp_fallback turned off nothing explains the
// fallback's slow AllReduce, and, as in the rules (no such alert exists there), it is not raised.
func TestSlowCollectiveNeedsAnEnabledExplanation(t *testing.T) {
	c := caseNamed(t, "nccl_tcp_fallback")
	cfg := testConfig()
	cfg.Verdicts = map[string]VerdictConfig{verdict.TCPFallback: {Enabled: false}}
	e := newTestEngine(t, cfg)
	got, _ := run(t, e, c, 0, 20)
	for i, g := range got {
		assert.NotContains(t, g, scenario.On(verdict.CollectiveSlow, verdict.CollectiveDevice(scenario.CommID(c), "AllReduce")), "sample %d", i)
	}
	on := newTestEngine(t, testConfig())
	got, _ = run(t, on, c, 0, 20)
	assert.Contains(t, got[19], scenario.On(verdict.CollectiveSlow, verdict.CollectiveDevice(scenario.CommID(c), "AllReduce")), "raised while tcp_fallback is evaluated")
}

// TestCollectiveWithinNodeNotJudgedByTheNIC: the Inspector's nnodes says a communicator is within
// the node (nccl.comm.nodes 1): NVLink or PCIe carry it, not the NIC, so its bus bandwidth is not
// compared with the port's rate. The same slow AllReduce (nccl_slow_no_hardware_cause, 4 GB/s of a
// 12.5 GB/s port) is slow across two nodes and raises nothing within one.
func TestCollectiveWithinNodeNotJudgedByTheNIC(t *testing.T) {
	c := caseNamed(t, "nccl_slow_no_hardware_cause")
	slow := scenario.On(verdict.CollectiveSlow, scenario.CommID(c)+"/AllReduce")
	for _, tc := range []struct {
		nodes string
		want  []string
	}{
		{"2", []string{slow, verdict.HealthyGPUDirect}},
		{"1", []string{verdict.HealthyGPUDirect}},
	} {
		e := newTestEngine(t, testConfig())
		var got []string
		var share bool
		for i, pts := range c.Stream(0, 12, 1) {
			for k := range pts {
				if _, ok := pts[k].Attrs["nccl.comm.nodes"]; ok {
					pts[k].Attrs["nccl.comm.nodes"] = tc.nodes
				}
			}
			at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
			e.ingest(toMetrics("n", c.Name, pts, at), at)
			md, _ := e.evaluate(at.Add(10 * time.Millisecond))
			got = holdingOf(md, "n")
			_, share = evidencePoint(md, "n", verdict.CollectivePathShare, scenario.CommID(c)+"/AllReduce")
		}
		assert.Equal(t, tc.want, got, "nnodes %s", tc.nodes)
		assert.Equal(t, tc.nodes != "1", share, "nnodes %s: the path share is evidence only across nodes", tc.nodes)
	}
}

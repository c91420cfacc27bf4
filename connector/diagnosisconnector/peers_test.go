package diagnosisconnector

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// jobNode is one node a gateway receives: the case whose node1 it plays, from sample from on
// (healthy_allreduce before), and the Slurm job that owns its GPU and NIC ("" for none).
type jobNode struct {
	host, caseName string
	from           int
	job            string
}

// runJobNodes feeds the nodes into one engine sample by sample, each with its job's owner points
// (scenario.JobOwnerPoints, what the owner receiver emits from a Slurm mapping), and returns the
// verdicts holding on each node after each sample, and the logs.
func runJobNodes(t *testing.T, e *engine, nodes []jobNode, samples int) (map[string][][]string, []plog.Logs) {
	t.Helper()
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	healthy := caseNamed(t, "healthy_allreduce").Stream(0, samples, e.cfg.Interval.Seconds())
	streams := make([][][]scenario.Point, len(nodes))
	for k, n := range nodes {
		streams[k] = caseNamed(t, n.caseName).Stream(0, samples, e.cfg.Interval.Seconds())
	}
	got := map[string][][]string{}
	var logs []plog.Logs
	for i := range samples {
		at := start.Add(time.Duration(i) * e.cfg.Interval)
		for k, n := range nodes {
			pts := healthy[i]
			if i >= n.from {
				pts = streams[k][i]
			}
			if n.job != "" {
				pts = append(pts[:len(pts):len(pts)], scenario.JobOwnerPoints(n.job)...)
			}
			e.ingest(toMetrics(n.host, n.caseName, pts, at), at)
		}
		md, ld := e.evaluate(at.Add(10 * time.Millisecond))
		for _, n := range nodes {
			got[n.host] = append(got[n.host], holdingOf(md, n.host))
		}
		logs = append(logs, ld)
	}
	return got, logs
}

// TestWaitsOnPeerOfItsJob: nodes that belong together through the job that owns their devices
// (no NCCL reporting): when job 4242's gw-b falls back to TCP at sample 10, its healthy peer gw-a
// waits on it within 2 intervals, says so in a sentence that names the peer, its fault and the
// job, and stops waiting (a 0 point, a clearing record) when gw-b leaves the job. gw-c, healthy in
// another job, and gw-d, on TCP in no job, wait on no one.
func TestWaitsOnPeerOfItsJob(t *testing.T) {
	e := newTestEngine(t, testConfig())
	const fault, samples = 10, 30
	nodes := []jobNode{
		{"gw-a", "healthy_allreduce", 0, "4242"},
		{"gw-b", "tcp_fallback", fault, "4242"},
		{"gw-c", "healthy_allreduce", 0, "7"},
		{"gw-d", "tcp_fallback", 0, ""},
	}
	got, logs := runJobNodes(t, e, nodes, samples)
	waits := scenario.On(verdict.WaitsOnPeer, "gw-b")
	for i := range samples {
		switch {
		case i < fault:
			assert.NotContains(t, got["gw-a"][i], waits, "sample %d: gw-b is healthy", i)
		case i >= fault+e.cfg.Hold:
			assert.Equal(t, []string{verdict.HealthyGPUDirect, waits}, got["gw-a"][i], "sample %d", i)
		}
		for _, h := range []string{"gw-b", "gw-c", "gw-d"} {
			for _, v := range got[h][i] {
				assert.False(t, strings.HasPrefix(v, verdict.WaitsOnPeer), "sample %d: %s raised %s", i, h, v)
			}
		}
	}
	var said []string
	for _, ld := range logs {
		forEachRecord(ld, func(host string, r plog.LogRecord) {
			if v, _ := r.Attributes().Get(verdict.AttrVerdict); v.Str() == verdict.WaitsOnPeer {
				said = append(said, host+": "+r.Body().Str())
			}
		})
	}
	require.Len(t, said, 1, "one record when gw-a starts waiting")
	assert.Contains(t, said[0], "gw-a: gw-a waits on gw-b (job 4242): gw-b is on TCP (tcp_fallback)")

	// gw-b leaves the job: the owner receiver emits its owner series once at 0, then no more.
	// gw-a waits no longer: its waits_on_peer series ends with a 0 and a clearing record.
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Add(samples * e.cfg.Interval)
	long := make([][][]scenario.Point, len(nodes))
	for k, n := range nodes {
		long[k] = caseNamed(t, n.caseName).Stream(0, samples+3, e.cfg.Interval.Seconds())
	}
	var zero, cleared bool
	for i := samples; i < samples+3; i++ {
		at := start.Add(time.Duration(i-samples) * e.cfg.Interval)
		for k, n := range nodes {
			pts := long[k][i]
			switch {
			case n.host == "gw-b" && i == samples:
				for _, p := range scenario.JobOwnerPoints(n.job) {
					p.Value = 0
					pts = append(pts[:len(pts):len(pts)], p)
				}
			case n.host != "gw-b" && n.job != "":
				pts = append(pts[:len(pts):len(pts)], scenario.JobOwnerPoints(n.job)...)
			}
			e.ingest(toMetrics(n.host, n.caseName, pts, at), at)
		}
		md, ld := e.evaluate(at.Add(10 * time.Millisecond))
		if i == samples {
			v, ok := verdictPoint(md, "gw-a", verdict.WaitsOnPeer, "gw-b")
			zero = ok && v == 0
		}
		forEachRecord(ld, func(host string, r plog.LogRecord) {
			if p, _ := r.Attributes().Get(verdict.AttrPrevious); host == "gw-a" && p.Str() == verdict.WaitsOnPeer {
				cleared = true
			}
		})
		if i > samples {
			_, ok := verdictPoint(md, "gw-a", verdict.WaitsOnPeer, "gw-b")
			assert.False(t, ok, "sample %d: a wait that ended has no more points", i)
		}
	}
	assert.True(t, zero, "the evaluation after gw-b left the job: gw-a's wait is 0")
	assert.True(t, cleared, "and its clearing is logged")
}

// verdictPoint is host's diagnosis.verdict point of verdict v on device, if md has one.
func verdictPoint(md pmetric.Metrics, host, v, device string) (int64, bool) {
	dp, ok := pointOf(md, host, verdict.MetricVerdict, verdict.AttrVerdict, v, device)
	return dp.IntValue(), ok
}

// TestWaitsOnTheFirstFaultyPeer: of two faulty peers in one group, the node names the first by
// name; a node with a fault of its own waits on no one.
func TestWaitsOnTheFirstFaultyPeer(t *testing.T) {
	e := newTestEngine(t, testConfig())
	got, _ := runJobNodes(t, e, []jobNode{
		{"n10", "congestion_20g", 0, "9"},
		{"n2", "tcp_fallback", 0, "9"},
		{"n3", "healthy_allreduce", 0, "9"},
	}, 10)
	assert.Equal(t, []string{verdict.HealthyGPUDirect, scenario.On(verdict.WaitsOnPeer, "n2")}, got["n3"][9])
	assert.Equal(t, []string{verdict.FabricCongestion}, got["n10"][9])
	assert.Equal(t, []string{verdict.TCPFallback}, got["n2"][9])
}

// forEachRecord calls f with each log record of ld and its host.name.
func forEachRecord(ld plog.Logs, f func(host string, r plog.LogRecord)) {
	rls := ld.ResourceLogs()
	for i := range rls.Len() {
		h, _ := rls.At(i).Resource().Attributes().Get("host.name")
		sls := rls.At(i).ScopeLogs()
		for j := range sls.Len() {
			lrs := sls.At(j).LogRecords()
			for k := range lrs.Len() {
				f(h.Str(), lrs.At(k))
			}
		}
	}
}

// TestPromtoolWaitsOnPeerOfItsJob: the generated rules, in promtool, on job 4242's two nodes of
// TestWaitsOnPeerOfItsJob at the default interval, steady: gw-a's waits_on_peer names gw-b from
// the evaluation after the first with rates (hold 2), and gw-c in another job waits on no one.
func TestPromtoolWaitsOnPeerOfItsJob(t *testing.T) {
	bin := promtool(t)
	cfg := createDefaultConfig()
	rules := PrometheusRules(cfg)
	interval := cfg.Interval
	const samples = 12
	pt := promtoolTest{Name: "job_peers", Interval: promDuration(interval)}
	for _, n := range []jobNode{{"gw-a", "healthy_allreduce", 0, "4242"}, {"gw-b", "tcp_fallback", 0, "4242"}, {"gw-c", "healthy_allreduce", 0, "7"}} {
		stream := caseNamed(t, n.caseName).SteadyStream(0, samples, interval.Seconds())
		for i := range stream {
			stream[i] = append(stream[i], scenario.JobOwnerPoints(n.job)...)
		}
		pt.InputSeries = append(pt.InputSeries, inputSeriesOf(stream, n.host)...)
	}
	name := alertName(verdict.WaitsOnPeer)
	var summary string
	for _, r := range rules.Groups[0].Rules {
		if r.Alert == name {
			summary = r.Annotations["summary"]
		}
	}
	labels := map[string]string{nodeLabel: "gw-a", "device": "gw-b", "verdict": verdict.WaitsOnPeer, "severity": rulesSeverity(rules, name)}
	for _, at := range []int{cfg.Hold, samples - 1} {
		pt.AlertRuleTest = append(pt.AlertRuleTest, alertRuleTest{EvalTime: promDuration(time.Duration(at) * interval), Alertname: name,
			ExpAlerts: []expAlert{{ExpLabels: labels, ExpAnnotations: expandAnnotations(map[string]string{
				"summary": summary, "description": "connector/diagnosisconnector/README.md#waits-on-peer"}, labels)}}})
	}
	assert.Contains(t, runPromtoolTest(t, bin, interval, rules, pt), "SUCCESS")
}

// TestPeerFaultsAreVerdicts: what a peer waits on are verdicts of the contract, and waits_on_peer
// is not one of them (a waiting node is no one's cause).
func TestPeerFaultsAreVerdicts(t *testing.T) {
	for _, f := range verdict.PeerFaults() {
		assert.Contains(t, verdict.Names(), f)
	}
	assert.False(t, slices.Contains(verdict.PeerFaults(), verdict.WaitsOnPeer))
}

// TestStragglerSaysWhoWaits: on nccl_straggler, node1's sentence says it is the straggler, with
// both nodes' bus bandwidths, and node2's that it waits on node1 for that reason.
func TestStragglerSaysWhoWaits(t *testing.T) {
	e := newTestEngine(t, testConfig())
	c := caseNamed(t, "nccl_straggler")
	_, logs := runNodes(t, e, c, 10)
	said := map[string]string{}
	for _, ld := range logs {
		forEachRecord(ld, func(host string, r plog.LogRecord) {
			if v, _ := r.Attributes().Get(verdict.AttrVerdict); v.Str() == verdict.Straggler || v.Str() == verdict.WaitsOnPeer {
				said[host+" "+v.Str()] = r.Body().Str()
			}
		})
	}
	n1, n2 := scenario.HostName(c, "node1"), scenario.HostName(c, "node2")
	comm := scenario.CommID(c)
	assert.Equal(t, n1+": the straggler of NCCL communicator "+comm+": its AllReduce ran at 11.5 GB/s bus bandwidth, 3.0× the next node's ("+n2+
		", 3.8 GB/s): the other nodes' ranks wait in each AllReduce for this node's to arrive; check its GPUs (clocks, power and thermal throttling, XIDs), its CPU and its data loading",
		said[n1+" "+verdict.Straggler])
	assert.Contains(t, said[n2+" "+verdict.WaitsOnPeer], n2+" waits on "+n1+" (NCCL communicator "+comm+"): "+n1+" is the straggler of NCCL communicator "+comm+" in AllReduce (straggler)")
	assert.Len(t, said, 2)
}

// TestStragglerAmongThree: of three nodes of a communicator, the one far above the next is the
// straggler; with two nodes close at the top (the third waited on both), none is.
func TestStragglerAmongThree(t *testing.T) {
	th := defaultThresholds()
	for _, tc := range []struct {
		bus  []float64
		want string
	}{
		{[]float64{10e9, 3e9, 3.2e9}, "a"},
		{[]float64{3e9, 10e9, 3.2e9}, "b"},
		{[]float64{10e9, 9e9, 3e9}, ""},
		{[]float64{5e9, 5e9, 5e9}, ""},
	} {
		var evals []evaluation
		for k, b := range tc.bus {
			st := &nodestate.State{Collectives: []nodestate.Collective{{Comm: "0x1", Ops: []nodestate.CollectiveOp{{Name: "AllReduce", BusBandwidth: b}}}}}
			evals = append(evals, evaluation{n: newNode(string(rune('a'+k)), nodestate.Limits{}), v: &nodeView{State: st}, cond: map[verdictKey]bool{}})
		}
		stragglerConditions(th, evals)
		got := ""
		for _, ev := range evals {
			held, ok := ev.cond[verdictKey{verdict.Straggler, "0x1/AllReduce"}]
			assert.True(t, ok, "%v: every member evaluated", tc.bus)
			if held {
				got += ev.n.Name
			}
		}
		assert.Equal(t, tc.want, got, "%v", tc.bus)
	}
}

// TestWaitKeepsItsPeer: a node waiting on n5 keeps waiting on it when n2, first by name, falls
// back to TCP as well (its wait does not move and restart its hold); a peer whose only fault is a
// verdict turned off makes no one wait.
func TestWaitKeepsItsPeer(t *testing.T) {
	e := newTestEngine(t, testConfig())
	got, _ := runJobNodes(t, e, []jobNode{
		{"n5", "tcp_fallback", 0, "9"},
		{"n2", "tcp_fallback", 6, "9"},
		{"n3", "healthy_allreduce", 0, "9"},
	}, 12)
	for i := e.cfg.Hold; i < 12; i++ {
		assert.Equal(t, []string{verdict.HealthyGPUDirect, scenario.On(verdict.WaitsOnPeer, "n5")}, got["n3"][i], "sample %d", i)
	}

	cfg := testConfig()
	cfg.Verdicts = map[string]VerdictConfig{verdict.TCPFallback: {Enabled: false}}
	off := newTestEngine(t, cfg)
	got, _ = runJobNodes(t, off, []jobNode{{"n5", "tcp_fallback", 0, "9"}, {"n3", "healthy_allreduce", 0, "9"}}, 6)
	assert.Equal(t, []string{verdict.HealthyGPUDirect}, got["n3"][5], "tcp_fallback off: n5 has no fault anyone is told of")
}

package diagnosisconnector

import (
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// samplesOf is how long a case is replayed: a whole transition and what follows it.
func samplesOf(c scenario.Case) int {
	if len(c.Phases) > 1 && c.Phases[len(c.Phases)-1].From >= scenario.TransitionFault {
		return scenario.TransitionSamples
	}
	return 60
}

// TestVerdictsOnSimulatedCases feeds every simulated case (internal/scenario: the paper's cases,
// the ones a naive detector gets wrong, the transitions and the nodes that wait on a peer) to one
// connector as the receivers of both its nodes report it, and checks each phase's verdicts on
// each node: raised within 2 intervals of the phase's start, the previous phase's cleared within
// 2, no other verdict at any time.
func TestVerdictsOnSimulatedCases(t *testing.T) {
	for _, c := range scenario.StreamCases() {
		t.Run(c.Name, func(t *testing.T) {
			e := newTestEngine(t, testConfig())
			samples := samplesOf(c)
			got, _ := runNodes(t, e, c, samples)
			for n, node := range scenario.Nodes {
				j := c.Judge(n, got[n])
				assert.Empty(t, j.Failures(samples), "%s: %s", node, j)
				t.Logf("%s: %s", node, j)
			}
		})
	}
}

// TestNodeAloneKnowsNoPeer: a collector that receives one node's metrics (the node's own, not a
// gateway) knows no peer: every case's verdicts hold on each node alone, less the cross-node ones
// (waits_on_peer, straggler), and no other verdict.
func TestNodeAloneKnowsNoPeer(t *testing.T) {
	for _, c := range scenario.StreamCases() {
		alone := withoutPeers(c)
		for n := range scenario.Nodes {
			e := newTestEngine(t, testConfig())
			got, _ := run(t, e, c, n, samplesOf(c))
			j := alone.Judge(n, got)
			assert.Empty(t, j.Failures(samplesOf(c)), "%s %s: %s", c.Name, scenario.Nodes[n], j)
		}
	}
}

// withoutPeers is c with no cross-node verdict expected.
func withoutPeers(c scenario.Case) scenario.Case {
	out := scenario.Case{Name: c.Name, Note: c.Note}
	for _, ph := range c.Phases {
		for n := range ph.Expect {
			var keep []string
			for _, e := range ph.Expect[n] {
				if !strings.HasPrefix(e, scenario.WaitsOnPeer+"@") && !strings.HasPrefix(e, scenario.Straggler+"@") {
					keep = append(keep, e)
				}
			}
			ph.Expect[n] = keep
		}
		out.Phases = append(out.Phases, ph)
	}
	return out
}

// TestHealthyTenMinutes: on the healthy replays, ten minutes of evaluations raise nothing but
// healthy_gpudirect.
func TestHealthyTenMinutes(t *testing.T) {
	for _, c := range scenario.StreamCases() {
		if len(c.Phases) != 1 || !slices.Equal(c.Phases[0].Expect[0], []string{scenario.HealthyGPUDirect}) ||
			!slices.Equal(c.Phases[0].Expect[1], []string{scenario.HealthyGPUDirect}) {
			continue
		}
		for n := range scenario.Nodes {
			e := newTestEngine(t, testConfig())
			got, _ := run(t, e, c, n, 600)
			for i, g := range got[scenario.Grace+1:] {
				assert.Equal(t, []string{scenario.HealthyGPUDirect}, g, "%s %s second %d", c.Name, scenario.Nodes[n], i+scenario.Grace+1)
			}
		}
	}
}

// TestHalfUpdatedNodeRaisesNothing: the receivers of a node scrape at different moments, so an
// evaluation may see the rnic receiver's new sample with the cpuuncore and gpu receivers' old
// ones (a state no real node is in: RDMA back at full rate while the host still copies the TCP
// fallback's bytes looks like a bounce). Hold keeps such an evaluation from raising a verdict.
func TestHalfUpdatedNodeRaisesNothing(t *testing.T) {
	for _, c := range scenario.StreamCases() {
		if len(c.Phases) < 3 {
			continue
		}
		for n := range scenario.Nodes {
			e := newTestEngine(t, testConfig())
			host := scenario.HostName(c, scenario.Nodes[n])
			start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
			var got [][]string
			for i, pts := range c.Stream(n, scenario.TransitionSamples, 1) {
				at := start.Add(time.Duration(i) * time.Second)
				var rnic, rest []scenario.Point
				for _, p := range pts {
					if strings.HasPrefix(p.Metric, "rnic.") || p.Attrs["component"] == "rnic" || p.Attrs["component"] == "netdev" {
						rnic = append(rnic, p)
					} else {
						rest = append(rest, p)
					}
				}
				e.ingest(toMetrics(host, c.Name, rnic, at), at)
				md, _ := e.evaluate(at.Add(100 * time.Millisecond))
				half := holdingOf(md, host)
				e.ingest(toMetrics(host, c.Name, rest, at.Add(300*time.Millisecond)), at)
				md, _ = e.evaluate(at.Add(500 * time.Millisecond))
				got = append(got, union(half, holdingOf(md, host)))
			}
			j := c.Judge(n, got)
			assert.Empty(t, j.Wrong, "%s %s: %s", c.Name, scenario.Nodes[n], j)
		}
	}
}

// TestLateEvaluationReadsTheSamplesBeforeIt: on a busy machine the ticker fires, the evaluation
// waits for the CPU, and meanwhile the next scrape's points (stamped after the evaluation's time)
// reach the connector. The evaluation reads the samples at or before its time, as PromQL does,
// so it decides as if it had run on time: every phase's verdicts within the case's bounds, none
// wrong. (Before the series kept a third sample, every such evaluation had no rate, decided
// nothing and restarted hold: TestDiagnosisInPrometheus failed under load with that.)
func TestLateEvaluationReadsTheSamplesBeforeIt(t *testing.T) {
	for _, c := range scenario.StreamCases() {
		alone := withoutPeers(c) // one node alone: TestNodeAloneKnowsNoPeer
		for n := range scenario.Nodes {
			e := newTestEngine(t, testConfig())
			host := scenario.HostName(c, scenario.Nodes[n])
			start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
			stream := c.Stream(n, samplesOf(c)+1, 1)
			var got [][]string
			for i := range len(stream) - 1 {
				at := start.Add(time.Duration(i) * time.Second)
				if i == 0 {
					e.ingest(toMetrics(host, c.Name, stream[0], at), at)
				}
				// The evaluation due 10 ms before the next scrape runs after it arrived.
				next := at.Add(time.Second)
				e.ingest(toMetrics(host, c.Name, stream[i+1], next), next)
				md, _ := e.evaluate(next.Add(-10 * time.Millisecond))
				got = append(got, holdingOf(md, host))
			}
			j := alone.Judge(n, got)
			assert.Empty(t, j.Failures(len(got)), "%s %s: %s: %v", c.Name, scenario.Nodes[n], j, got)
		}
	}
}

func union(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

// TestSimulatorNamesTheConnectorsVerdicts: the simulated cases' expectations use this connector's
// verdict names and the receivers' device names.
func TestSimulatorNamesTheConnectorsVerdicts(t *testing.T) {
	for _, c := range scenario.StreamCases() {
		for _, ph := range c.Phases {
			for _, exp := range ph.Expect {
				for _, e := range exp {
					v, _, _ := strings.Cut(e, "@")
					assert.Contains(t, verdict.Names(), v, "%s: %s", c.Name, e)
				}
			}
		}
	}
}

// TestVanishedPortEndsItsSeries: when a port's metrics end (port_vanishes: node1's second port
// goes away at sample 60), its verdict and its evidence series end within the window, instead of
// reporting evidence 0 about a device that no longer exists for the 5 minutes of stale_after.
func TestVanishedPortEndsItsSeries(t *testing.T) {
	c := caseNamed(t, "port_vanishes")
	cfg := testConfig()
	e := newTestEngine(t, cfg)
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	host := scenario.HostName(c, scenario.Nodes[0])
	gone := scenario.NIC2 + "/1"
	window := int(cfg.Window / cfg.Interval)
	for i, pts := range c.Stream(0, 90, cfg.Interval.Seconds()) {
		at := start.Add(time.Duration(i) * cfg.Interval)
		e.ingest(toMetrics(host, c.Name, pts, at), at)
		md, _ := e.evaluate(at.Add(10 * time.Millisecond))
		devices := map[string]bool{}
		rms := md.ResourceMetrics()
		for r := range rms.Len() {
			ms := rms.At(r).ScopeMetrics().At(0).Metrics()
			for m := range ms.Len() {
				dps := ms.At(m).Gauge().DataPoints()
				for k := range dps.Len() {
					d, _ := dps.At(k).Attributes().Get(verdict.AttrDevice)
					devices[ms.At(m).Name()+" "+d.Str()] = true
				}
			}
		}
		switch {
		case i < scenario.TransitionFault:
			assert.True(t, devices[verdict.MetricEvidence+" "+gone], "sample %d: the port's evidence while it is there", i)
			assert.True(t, devices[verdict.MetricVerdict+" "+gone], "sample %d: its verdict", i)
		case i >= scenario.TransitionFault+window-1:
			assert.False(t, devices[verdict.MetricEvidence+" "+gone], "sample %d: evidence of a port gone for %d samples", i, i-scenario.TransitionFault+1)
			assert.False(t, devices[verdict.MetricVerdict+" "+gone], "sample %d: verdict of a port gone for %d samples", i, i-scenario.TransitionFault+1)
		}
	}
}

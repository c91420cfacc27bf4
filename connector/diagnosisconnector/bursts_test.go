package diagnosisconnector

import (
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

// sentenceOf is the body of the first log record that raised which, "" if none.
func sentenceOf(logs []plog.Logs, which string) string {
	for _, ld := range logs {
		for i := range ld.ResourceLogs().Len() {
			sls := ld.ResourceLogs().At(i).ScopeLogs()
			for j := range sls.Len() {
				lrs := sls.At(j).LogRecords()
				for k := range lrs.Len() {
					if v, _ := lrs.At(k).Attributes().Get(verdict.AttrVerdict); v.Str() == which {
						return lrs.At(k).Body().Str()
					}
				}
			}
		}
	}
	return ""
}

// TestCongestionInBursts: the rnic receiver's fast sampler (rnic.burst.time_above) shows a port at
// 30 % on average at line rate for 30 % of the time, its bursts ECN-marked at 2.4e-4 per packet,
// fewer than sustained congestion needs: congestion in bursts, said with the bursts; the healthy
// AllReduce in 40 ms bursts (no mark) stays healthy, its sentence saying the bursts too. The
// verdicts' latency on both is TestVerdictsOnSimulatedCases's (scenario.BurstCases are among
// StreamCases), the generated rules' TestPromtoolTestRules's.
func TestCongestionInBursts(t *testing.T) {
	e := newTestEngine(t, testConfig())
	got, logs := run(t, e, caseNamed(t, scenario.BurstCongestionCase), 0, 12)
	assert.Equal(t, []string{verdict.FabricCongestion}, got[len(got)-1])
	s := sentenceOf(logs, verdict.FabricCongestion)
	require.NotEmpty(t, s)
	assert.Contains(t, s, "mlx5_0/1 transmits")
	assert.Regexp(t, `on average, at ≥90\.0% of its line 30\.0% of the time \(peak 12\.5 GB/s over 10ms\): its queues fill in every burst, 0\.02[0-9]% of its packets ECN-marked or CNPs`, s)

	// The time at line rate is evidence of its own, on the port.
	md, _ := e.evaluate(time.Date(2026, 12, 1, 0, 0, 11, 500_000_000, time.UTC))
	x, ok := evidencePoint(md, scenario.HostName(caseNamed(t, scenario.BurstCongestionCase), scenario.Nodes[0]), verdict.BurstTimeShare, scenario.Port)
	require.True(t, ok, "port_burst_time_share on %s", scenario.Port)
	assert.InDelta(t, 0.3, x, 0.01)

	e = newTestEngine(t, testConfig())
	got, logs = run(t, e, caseNamed(t, scenario.BurstCase), 0, 12)
	assert.Equal(t, []string{verdict.HealthyGPUDirect}, got[len(got)-1])
	assert.Contains(t, sentenceOf(logs, verdict.HealthyGPUDirect), "; in bursts: mlx5_0/1 at ≥90.0% of its line 6.7% of the time (peak 12.5 GB/s over 10ms)")
}

// evidencePoint is host's diagnosis.evidence point of ratio on device, if md has one.
func evidencePoint(md pmetric.Metrics, host, ratio, device string) (float64, bool) {
	dp, ok := pointOf(md, host, verdict.MetricEvidence, verdict.AttrRatio, ratio, device)
	return dp.DoubleValue(), ok
}

// pointOf is host's point of the connector's metric whose attribute key is value on device.
func pointOf(md pmetric.Metrics, host, metric, key, value, device string) (pmetric.NumberDataPoint, bool) {
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		if h, _ := rms.At(i).Resource().Attributes().Get("host.name"); h.Str() != host {
			continue
		}
		ms := rms.At(i).ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			if ms.At(j).Name() != metric {
				continue
			}
			dps := ms.At(j).Gauge().DataPoints()
			for k := range dps.Len() {
				r, _ := dps.At(k).Attributes().Get(key)
				d, _ := dps.At(k).Attributes().Get(verdict.AttrDevice)
				if r.Str() == value && d.Str() == device {
					return dps.At(k), true
				}
			}
		}
	}
	return pmetric.NewNumberDataPoint(), false
}

// TestCongestionInBurstsNeedsTheSampler: without the fast sampler's series (bursts.period unset)
// the same marked port at 30 % is judged on its marks per packet alone, as before: healthy.
func TestCongestionInBurstsNeedsTheSampler(t *testing.T) {
	c := caseNamed(t, scenario.BurstCongestionCase)
	e := newTestEngine(t, testConfig())
	var got [][]string
	for i, pts := range c.Stream(0, 12, 1) {
		var keep []scenario.Point
		for _, p := range pts {
			if p.Metric != "rnic.burst.time_above" && p.Metric != "rnic.burst.peak_rate" {
				keep = append(keep, p)
			}
		}
		at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
		e.ingest(toMetrics("n", c.Name, keep, at), at)
		md, _ := e.evaluate(at.Add(10 * time.Millisecond))
		got = append(got, holdingOf(md, "n"))
	}
	assert.Equal(t, []string{verdict.HealthyGPUDirect}, got[len(got)-1])
}

// TestCongestedInBurstsFloors: the marks or pauses that make a bursty port congested are more than
// a healthy fabric's stray ones (congestion_burst_min_marks_per_packet,
// congestion_burst_min_pause_frames_per_gbps), pauses alone suffice, and the sentence of a port
// that paused without a mark says the pauses.
func TestCongestedInBurstsFloors(t *testing.T) {
	th := defaultThresholds()
	port := func(marks, pauses float64) nodestate.Port {
		return nodestate.Port{Device: "mlx5_0/1", Netdev: "ens1f0np0", Rate: 12.5e9, Tx: 3.75e9, Packets: 1.8e6, Marks: marks, PauseFrames: pauses,
			TxPeak: 12.5e9, PeakWindow: "10ms", TxAbove: map[string]float64{"0.5": 0.3, "0.9": 0.3}}
	}
	for _, tc := range []struct {
		name          string
		marks, pauses float64
		want          bool
	}{
		{"unmarked", 0, 0, false},
		{"a stray CNP a second", 1, 0, false},
		{"2.4e-4 of the packets marked", 432, 0, true},
		{"a few pauses", 0, 50, false},
		{"paused, unmarked", 0, 150, true},
	} {
		assert.Equal(t, tc.want, congestedInBursts(th, port(tc.marks, tc.pauses)), tc.name)
	}
	quiet := port(0, 150)
	quiet.TxAbove = map[string]float64{"0.9": 0.01} // 1 % of the time at line rate
	assert.False(t, congestedInBursts(th, quiet), "too little time at line rate")

	v := &nodeView{State: &nodestate.State{Ports: []nodestate.Port{port(0, 150)}}}
	s := sentence(verdict.FabricCongestion, "", &node{Node: nodestate.New("node1", nodestate.Limits{})}, v)
	assert.Contains(t, s, "mlx5_0/1 transmits 3.8 GB/s, 30.0% of its 12.5 GB/s on average, at ≥90.0% of its line 30.0% of the time (peak 12.5 GB/s over 10ms): its queues fill in every burst, ens1f0np0 paused 150 frames/s")
}

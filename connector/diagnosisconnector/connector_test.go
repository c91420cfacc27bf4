package diagnosisconnector

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
)

func caseNamed(t *testing.T, name string) scenario.Case {
	t.Helper()
	for _, c := range scenario.Cases() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no simulated case %s", name)
	return scenario.Case{}
}

func records(logs []plog.Logs) []plog.LogRecord {
	var out []plog.LogRecord
	for _, ld := range logs {
		for i := range ld.ResourceLogs().Len() {
			sl := ld.ResourceLogs().At(i).ScopeLogs()
			for j := range sl.Len() {
				lr := sl.At(j).LogRecords()
				for k := range lr.Len() {
					out = append(out, lr.At(k))
				}
			}
		}
	}
	return out
}

func attr(lr plog.LogRecord, k string) string {
	v, _ := lr.Attributes().Get(k)
	return v.AsString()
}

// TestLogsOnePerChange: a TCP fallback transition writes one record when the node turns healthy,
// one when it falls back (WARN, the sentence an operator acts on, the evidence as attributes),
// and one when it is healthy again.
func TestLogsOnePerChange(t *testing.T) {
	e := newTestEngine(t, testConfig())
	_, logs := run(t, e, caseNamed(t, "transition_tcp_fallback"), 0, scenario.TransitionSamples)
	recs := records(logs)
	require.Len(t, recs, 3)
	assert.Equal(t, HealthyGPUDirect, attr(recs[0], "verdict"))
	assert.Equal(t, "", attr(recs[0], "previous_verdict"))
	assert.Equal(t, plog.SeverityNumberInfo, recs[0].SeverityNumber())

	fb := recs[1]
	assert.Equal(t, TCPFallback, attr(fb, "verdict"))
	assert.Equal(t, HealthyGPUDirect, attr(fb, "previous_verdict"))
	assert.Equal(t, "", attr(fb, "device"))
	assert.Equal(t, plog.SeverityNumberWarn, fb.SeverityNumber())
	assert.Equal(t, "WARN", fb.SeverityText())
	assert.Regexp(t, `^transition_tcp_fallback-node1: NCCL appears to have fallen back to TCP: RDMA 0 B/s, ens1f0np0 \d\.\d GB/s, CPU PCIe \d+\.\d GB/s, host memory \d+\.\d GB/s; check NCCL_IB_DISABLE / NCCL_NET / NCCL_IB_HCA`, fb.Body().Str())
	share, ok := fb.Attributes().Get(rRDMAShare)
	require.True(t, ok, "evidence as attributes")
	assert.Less(t, share.Double(), 0.01)
	cpu, _ := fb.Attributes().Get(rCPUPerNetwork)
	assert.InDelta(t, 2.0, cpu.Double(), 0.2, "a socket copy crosses the root complex twice per byte")

	assert.Equal(t, HealthyGPUDirect, attr(recs[2], "verdict"))
	assert.Equal(t, TCPFallback, attr(recs[2], "previous_verdict"))
}

// TestLogsDeviceVerdictStartsAndClears: a port that trains down and recovers is reported twice.
func TestLogsDeviceVerdictStartsAndClears(t *testing.T) {
	e := newTestEngine(t, testConfig())
	_, logs := run(t, e, caseNamed(t, "transition_link_degraded"), 0, scenario.TransitionSamples)
	var dev []plog.LogRecord
	for _, r := range records(logs) {
		if attr(r, "device") != "" {
			dev = append(dev, r)
		}
	}
	require.Len(t, dev, 2)
	assert.Equal(t, LinkDegraded, attr(dev[0], "verdict"))
	assert.Equal(t, scenario.Port, attr(dev[0], "device"))
	assert.Equal(t, plog.SeverityNumberWarn, dev[0].SeverityNumber())
	assert.Contains(t, dev[0].Body().Str(), "mlx5_0/1 runs at 50 Gb/s, below the 100 Gb/s it reached before")
	assert.Equal(t, "", attr(dev[1], "verdict"))
	assert.Equal(t, LinkDegraded, attr(dev[1], "previous_verdict"))
	assert.Equal(t, plog.SeverityNumberInfo, dev[1].SeverityNumber())
}

// TestVerdictPointsAndResource: every enabled verdict is a point per evaluation (1 holding, 0
// not), on the input's resource; evidence per node and port.
func TestVerdictPointsAndResource(t *testing.T) {
	cfg := testConfig()
	cfg.Verdicts = map[string]VerdictConfig{Idle: {Enabled: false}}
	e := newTestEngine(t, cfg)
	c := caseNamed(t, "healthy_allreduce")
	start := time.Now()
	var md pmetric.Metrics
	for i, pts := range c.Stream(0, 4, 1) {
		at := start.Add(time.Duration(i) * time.Second)
		e.ingest(toMetrics("node1", "healthy_allreduce", pts, at), at)
		md, _ = e.evaluate(at.Add(time.Millisecond))
	}
	require.Equal(t, 1, md.ResourceMetrics().Len())
	res := md.ResourceMetrics().At(0).Resource().Attributes().AsRaw()
	assert.Equal(t, map[string]any{"host.name": "node1", "iclens.case": "healthy_allreduce"}, res)
	points := map[string]int64{}
	evidence := map[string]float64{}
	ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	for i := range ms.Len() {
		m := ms.At(i)
		dps := m.Gauge().DataPoints()
		for j := range dps.Len() {
			a := dps.At(j).Attributes().AsRaw()
			switch m.Name() {
			case "diagnosis.verdict":
				assert.Equal(t, "1", m.Unit())
				points[label(a["verdict"].(string), a["device"].(string))] = dps.At(j).IntValue()
			case "diagnosis.evidence":
				evidence[label(a["ratio"].(string), a["device"].(string))] = dps.At(j).DoubleValue()
			}
		}
	}
	assert.Equal(t, map[string]int64{
		HealthyGPUDirect: 1, TCPFallback: 0, GPUDirectBounce: 0, FabricCongestion: 0,
		scenario.On(PFCStorm, scenario.Port): 0, scenario.On(LinkDegraded, scenario.Port): 0,
		scenario.On(LinkDegraded, scenario.NIC): 0, scenario.On(LinkDegraded, scenario.GPU): 0,
		scenario.On(GPUDirectNotReady, scenario.GPU): 0,
	}, points, "idle is disabled: no point")
	assert.Greater(t, evidence[rRDMAShare], 0.99)
	assert.Less(t, evidence[rCPUPerNetwork], 0.05)
	// A ring AllReduce step averages 5.2 GB/s: compute phases in between.
	assert.InDelta(t, 0.42, evidence[scenario.On(rTransmitLine, scenario.Port)], 0.05)
	assert.Contains(t, evidence, rNetworkLine)
	assert.Contains(t, evidence, rGPULine)
	assert.Contains(t, evidence, rPathWrite)
	assert.Contains(t, evidence, rMemoryPerNetwork)
}

// TestNodeWithoutHostName: a node agent's metrics without host.name are "this node".
func TestNodeWithoutHostName(t *testing.T) {
	e := newTestEngine(t, testConfig())
	c := caseNamed(t, "tcp_fallback")
	start := time.Now()
	var logs []plog.Logs
	for i, pts := range c.Stream(0, 4, 1) {
		at := start.Add(time.Duration(i) * time.Second)
		e.ingest(toMetrics("", "", pts, at), at)
		_, ld := e.evaluate(at.Add(time.Millisecond))
		logs = append(logs, ld)
	}
	recs := records(logs)
	require.Len(t, recs, 1)
	assert.Regexp(t, `^this node: NCCL appears to have fallen back to TCP`, recs[0].Body().Str())
}

// TestNodesBoundedAndForgotten: beyond max_nodes the node seen least recently goes; a node silent
// for stale_after is forgotten.
func TestNodesBoundedAndForgotten(t *testing.T) {
	cfg := testConfig()
	cfg.MaxNodes = 2
	cfg.StaleAfter = 10 * time.Second
	e := newTestEngine(t, cfg)
	c := caseNamed(t, "healthy_allreduce")
	pts := c.Stream(0, 1, 1)[0]
	start := time.Now()
	for i, host := range []string{"a", "b", "c"} {
		at := start.Add(time.Duration(i) * time.Second)
		e.ingest(toMetrics(host, "", pts, at), at)
	}
	assert.Len(t, e.nodes, 2)
	assert.NotContains(t, e.nodes, "a")
	e.evaluate(start.Add(time.Minute))
	assert.Empty(t, e.nodes)
}

// TestCounterResetIsARate: a counter that goes back (driver reload) is read as restarted from
// zero, as PromQL's irate does.
func TestCounterResetIsARate(t *testing.T) {
	s := &series{}
	s.add(1e9, 1000)
	s.add(2e9, 300)
	r, ok := s.rate(2e9, 3*time.Second)
	require.True(t, ok)
	assert.Equal(t, 300.0, r)
	s.add(3e9, 1300)
	r, _ = s.rate(3e9, 3*time.Second)
	assert.Equal(t, 1000.0, r)
	_, ok = s.rate(6e9, 3*time.Second)
	assert.False(t, ok, "samples older than the window give no rate")
}

// TestConnectorSharesOneEngine: the metrics and the logs instances of one configured connector
// evaluate once and both get their output through the collector's lifecycle.
func TestConnectorSharesOneEngine(t *testing.T) {
	cfg := testConfig()
	cfg.Interval = 50 * time.Millisecond
	cfg.Window = time.Hour
	cfg.StaleAfter = time.Hour
	f := NewFactory()
	set := connectortest.NewNopSettings(typ)
	msink, lsink := new(consumertest.MetricsSink), new(consumertest.LogsSink)
	mc, err := f.CreateMetricsToMetrics(context.Background(), set, cfg, msink)
	require.NoError(t, err)
	lc, err := f.CreateMetricsToLogs(context.Background(), set, cfg, lsink)
	require.NoError(t, err)
	require.NoError(t, mc.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, lc.Start(context.Background(), componenttest.NewNopHost()))
	c := caseNamed(t, "tcp_fallback")
	start := time.Now().Add(-time.Minute)
	for i, pts := range c.Stream(0, 3, 1) {
		md := toMetrics("node1", "", pts, start.Add(time.Duration(i)*time.Second))
		// The collector hands the same batch to both instances.
		require.NoError(t, mc.ConsumeMetrics(context.Background(), md))
		require.NoError(t, lc.ConsumeMetrics(context.Background(), md))
	}
	require.Eventually(t, func() bool { return lsink.LogRecordCount() > 0 }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, mc.Shutdown(context.Background()))
	require.NoError(t, lc.Shutdown(context.Background()))
	assert.Equal(t, 1, lsink.LogRecordCount(), "one record: the one change to tcp_fallback")
	assert.NotEmpty(t, msink.AllMetrics())
	assert.Empty(t, engines, "the last shutdown lets the engine go")
}

// TestOtherMetricsAreNotANode: a training job's own metrics (OTLP, same host.name) neither make a
// node nor lend it their resource.
func TestOtherMetricsAreNotANode(t *testing.T) {
	e := newTestEngine(t, testConfig())
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("host.name", "node1")
	rm.Resource().Attributes().PutStr("service.name", "trainer")
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("train.step.duration")
	m.SetEmptyGauge().DataPoints().AppendEmpty().SetDoubleValue(1)
	e.ingest(md, time.Now())
	assert.Empty(t, e.nodes)

	pts := caseNamed(t, "healthy_allreduce").Stream(0, 1, 1)[0]
	e.ingest(toMetrics("node1", "", pts, time.Now()), time.Now())
	e.ingest(md, time.Now())
	require.Contains(t, e.nodes, "node1")
	_, ok := e.nodes["node1"].resource.Get("service.name")
	assert.False(t, ok)
}

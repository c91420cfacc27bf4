package diagnosisconnector

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tilinna/clock"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector/internal/metadatatest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

func caseNamed(t *testing.T, name string) scenario.Case {
	t.Helper()
	c, ok := scenario.Named(name)
	if !ok {
		t.Fatalf("no simulated case %s", name)
	}
	return c
}

// observedEngine is an engine whose telemetry and logs the test reads.
func observedEngine(t *testing.T, cfg *Config) (*engine, *componenttest.Telemetry, *observer.ObservedLogs) {
	t.Helper()
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	set := metadatatest.NewSettings(tt)
	core, logs := observer.New(zap.InfoLevel)
	set.Logger = zap.New(core)
	e, err := engineFor(set, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, (&diagnosis{e: e}).Shutdown(t.Context())) })
	return e, tt, logs
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
	assert.Equal(t, verdict.HealthyGPUDirect, attr(recs[0], "verdict"))
	assert.Equal(t, "", attr(recs[0], "previous_verdict"))
	assert.Equal(t, plog.SeverityNumberInfo, recs[0].SeverityNumber())

	fb := recs[1]
	assert.Equal(t, verdict.TCPFallback, attr(fb, "verdict"))
	assert.Equal(t, verdict.HealthyGPUDirect, attr(fb, "previous_verdict"))
	assert.Equal(t, "", attr(fb, "device"))
	assert.Equal(t, plog.SeverityNumberWarn, fb.SeverityNumber())
	assert.Equal(t, "WARN", fb.SeverityText())
	assert.Regexp(t, `^transition_tcp_fallback-node1: NCCL appears to have fallen back to TCP: RDMA 0 B/s, ens1f0np0 \d\.\d GB/s, CPU PCIe \d+\.\d GB/s, host memory \d+\.\d GB/s; check NCCL_IB_DISABLE / NCCL_NET / NCCL_IB_HCA`, fb.Body().Str())
	share, ok := fb.Attributes().Get(verdict.RDMAShare)
	require.True(t, ok, "evidence as attributes")
	assert.Less(t, share.Double(), 0.01)
	cpu, _ := fb.Attributes().Get(verdict.CPUPerNetwork)
	assert.InDelta(t, 2.0, cpu.Double(), 0.2, "a socket copy crosses the root complex twice per byte")

	assert.Equal(t, verdict.HealthyGPUDirect, attr(recs[2], "verdict"))
	assert.Equal(t, verdict.TCPFallback, attr(recs[2], "previous_verdict"))
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
	assert.Equal(t, verdict.LinkDegraded, attr(dev[0], "verdict"))
	assert.Equal(t, scenario.Port, attr(dev[0], "device"))
	assert.Equal(t, plog.SeverityNumberWarn, dev[0].SeverityNumber())
	assert.Contains(t, dev[0].Body().Str(), "mlx5_0/1 runs at 50 Gb/s, below the 100 Gb/s it reached before")
	assert.Equal(t, "", attr(dev[1], "verdict"))
	assert.Equal(t, verdict.LinkDegraded, attr(dev[1], "previous_verdict"))
	assert.Equal(t, plog.SeverityNumberInfo, dev[1].SeverityNumber())
}

// TestVerdictPointsAndResource: every enabled verdict is a point per evaluation (1 holding, 0
// not), on the input's resource; evidence per node and port.
func TestVerdictPointsAndResource(t *testing.T) {
	cfg := testConfig()
	cfg.Verdicts = map[string]VerdictConfig{verdict.Idle: {Enabled: false}}
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
		verdict.HealthyGPUDirect: 1, verdict.TCPFallback: 0, verdict.GPUDirectBounce: 0, verdict.FabricCongestion: 0,
		scenario.On(verdict.PFCStorm, scenario.Port): 0, scenario.On(verdict.LinkDegraded, scenario.Port): 0,
		scenario.On(verdict.LinkDegraded, scenario.NIC): 0, scenario.On(verdict.LinkDegraded, scenario.GPU): 0,
		scenario.On(verdict.GPUDirectNotReady, scenario.GPU): 0,
	}, points, "idle is disabled: no point")
	assert.Greater(t, evidence[verdict.RDMAShare], 0.99)
	assert.Less(t, evidence[verdict.CPUPerNetwork], 0.05)
	// A ring AllReduce step averages 5.2 GB/s: compute phases in between.
	assert.InDelta(t, 0.42, evidence[scenario.On(verdict.TransmitLine, scenario.Port)], 0.05)
	assert.Contains(t, evidence, verdict.NetworkLine)
	assert.Contains(t, evidence, verdict.GPULine)
	assert.Contains(t, evidence, verdict.PathWrite)
	assert.Contains(t, evidence, verdict.MemoryPerNetwork)
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

// TestConnectorSharesOneEngine: the metrics and the logs instances of one configured connector
// share one engine, which evaluates each node once per interval: on a clock the test moves (as
// contrib's spanmetrics connector's tests do), N ticks are N evaluations in the component's
// telemetry, not 2N (two engines would each count theirs), and both sinks get their output.
func TestConnectorSharesOneEngine(t *testing.T) {
	cfg := testConfig()
	cfg.Window, cfg.StaleAfter = time.Hour, time.Hour
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	f := NewFactory()
	set := metadatatest.NewSettings(tt)
	msink, lsink := new(consumertest.MetricsSink), new(consumertest.LogsSink)
	mc, err := f.CreateMetricsToMetrics(context.Background(), set, cfg, msink)
	require.NoError(t, err)
	lc, err := f.CreateMetricsToLogs(context.Background(), set, cfg, lsink)
	require.NoError(t, err)
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	mock := clock.NewMock(start)
	for _, c := range []connector.Metrics{mc, lc} {
		c.(*diagnosis).e.clock = mock
	}
	require.NoError(t, mc.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, lc.Start(context.Background(), componenttest.NewNopHost()))
	c := caseNamed(t, "tcp_fallback")
	const ticks = 4
	for i, pts := range c.Stream(0, ticks, 1) {
		md := toMetrics("node1", "", pts, mock.Now().Add(-time.Millisecond))
		// The collector hands the same batch to both instances.
		require.NoError(t, mc.ConsumeMetrics(context.Background(), md))
		require.NoError(t, lc.ConsumeMetrics(context.Background(), md))
		mock.Add(cfg.Interval)
		require.Eventually(t, func() bool { return len(msink.AllMetrics()) == i+1 }, time.Minute, time.Millisecond,
			"the evaluation of tick %d", i+1)
	}
	require.Eventually(t, func() bool { return lsink.LogRecordCount() == 1 }, time.Minute, time.Millisecond, "the change to tcp_fallback")
	metadatatest.AssertEqualConnectorDiagnosisEvaluations(t, tt, []metricdata.DataPoint[int64]{{Value: ticks}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualConnectorDiagnosisVerdictChanges(t, tt, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualConnectorDiagnosisNodes(t, tt, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
	require.NoError(t, mc.Shutdown(context.Background()))
	require.NoError(t, lc.Shutdown(context.Background()))
	assert.Len(t, msink.AllMetrics(), ticks, "one evaluation per tick")
	assert.Equal(t, 1, lsink.LogRecordCount(), "one record: the one change to tcp_fallback")
	assert.Empty(t, engines, "the last shutdown lets the engine go")
}

// TestEvictionSaidAndCounted: past max_nodes the least recently seen node goes, said at Warn
// with a count (once a minute at most) and counted in the connector's telemetry.
func TestEvictionSaidAndCounted(t *testing.T) {
	cfg := testConfig()
	cfg.MaxNodes = 2
	e, tt, logs := observedEngine(t, cfg)
	pts := caseNamed(t, "healthy_allreduce").Stream(0, 1, 1)[0]
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := range 10 {
		at := start.Add(time.Duration(i) * time.Second)
		e.ingest(toMetrics(fmt.Sprintf("node%d", i), "", pts, at), at)
	}
	assert.Len(t, e.nodes, 2)
	assert.Contains(t, e.nodes, "node9", "the newest node is kept")
	assert.Contains(t, e.nodes, "node8")
	warns := logs.FilterLevelExact(zap.WarnLevel).FilterMessageSnippet("max_nodes").All()
	require.Len(t, warns, 1, "said once within a minute, not once per node")
	assert.Equal(t, int64(1), warns[0].ContextMap()["evicted"])
	// A minute later the next eviction says how many went since.
	at := start.Add(2 * time.Minute)
	e.ingest(toMetrics("late", "", pts, at), at)
	warns = logs.FilterLevelExact(zap.WarnLevel).FilterMessageSnippet("max_nodes").All()
	require.Len(t, warns, 2)
	assert.Equal(t, int64(8), warns[1].ContextMap()["evicted"])
	assert.Equal(t, int64(9), warns[1].ContextMap()["evicted_total"])
	metadatatest.AssertEqualConnectorDiagnosisNodesEvicted(t, tt, []metricdata.DataPoint[int64]{{Value: 9}}, metricdatatest.IgnoreTimestamp())
}

// TestRefusedVerdictsSaidOnce: while the next consumer refuses the verdicts (an exporter's full
// queue: beside a busy Prometheus the end-to-end test saw one Warn an interval), the first refusal
// is said at Warn, the rest only at Debug, and the recovery at Info with how many evaluations
// were refused; a second run of refusals is said again.
func TestRefusedVerdictsSaidOnce(t *testing.T) {
	cfg := testConfig()
	e, _, logs := observedEngine(t, cfg)
	var refuse error
	next, err := consumer.NewMetrics(func(context.Context, pmetric.Metrics) error { return refuse })
	require.NoError(t, err)
	e.metricsOut = next
	pts := caseNamed(t, "healthy_allreduce").Stream(0, 1, 1)[0]
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	tick := func(i int) {
		at := start.Add(time.Duration(i) * cfg.Interval)
		e.ingest(toMetrics("node1", "", pts, at), at)
		e.evaluateAndSend(at.Add(10 * time.Millisecond))
	}
	said := func() (warn, info int) {
		return logs.FilterMessageSnippet("refused the verdicts").FilterLevelExact(zap.WarnLevel).Len(),
			logs.FilterMessageSnippet("takes the verdicts again").FilterLevelExact(zap.InfoLevel).Len()
	}

	tick(0)
	warn, info := said()
	assert.Zero(t, warn+info, "taken: nothing to say")
	refuse = errors.New("sending queue is full")
	for i := 1; i <= 5; i++ {
		tick(i)
	}
	warn, info = said()
	assert.Equal(t, 1, warn, "five refused evaluations, said once")
	assert.Zero(t, info)
	refuse = nil
	tick(6)
	tick(7)
	warn, info = said()
	assert.Equal(t, 1, warn)
	require.Equal(t, 1, info, "the recovery is said once")
	back := logs.FilterMessageSnippet("takes the verdicts again").All()[0]
	assert.Equal(t, int64(5), back.ContextMap()["evaluations_refused"])
	refuse = errors.New("sending queue is full")
	tick(8)
	warn, _ = said()
	assert.Equal(t, 2, warn, "a new run of refusals is said again")
}

// TestRefusesPointsFarFromNow: one point stamped 31 years ahead neither becomes its series'
// newest sample (which would freeze the node's diagnosis: every later sample would look already
// seen) nor goes unsaid: it is counted, and said once.
func TestRefusesPointsFarFromNow(t *testing.T) {
	cfg := testConfig()
	e, tt, logs := observedEngine(t, cfg)
	c := caseNamed(t, "tcp_fallback")
	host := "node1"
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	stream := c.Stream(0, 10, 1)
	future := toMetrics(host, "", stream[0], start.AddDate(31, 0, 0))
	var got [][]string
	for i, pts := range stream {
		at := start.Add(time.Duration(i) * time.Second)
		if i == 1 || i == 2 {
			e.ingest(future, at)
		}
		e.ingest(toMetrics(host, "", pts, at), at)
		md, _ := e.evaluate(at.Add(10 * time.Millisecond))
		got = append(got, holdingOf(md, host))
	}
	assert.Equal(t, []string{verdict.TCPFallback}, got[len(got)-1], "the node is still diagnosed")
	assert.Len(t, logs.FilterMessageSnippet("far from").All(), 1, "said once")
	read := 0
	for _, p := range stream[0] {
		if nodestate.Reads(p.Metric) {
			read++
		}
	}
	metadatatest.AssertEqualConnectorDiagnosisPointsRefused(t, tt,
		[]metricdata.DataPoint[int64]{{Value: int64(2 * read)}}, metricdatatest.IgnoreTimestamp())
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
	_, ok := e.nodes["node1"].Resource.Get("service.name")
	assert.False(t, ok)
}

// TestUnwatchedInterfaceSaysSo: NCCL on sockets over an interface no receiver reports is a TCP
// fallback whose sentence says what the host-side bytes show and that the interface is not
// watched.
func TestUnwatchedInterfaceSaysSo(t *testing.T) {
	e := newTestEngine(t, testConfig())
	_, logs := run(t, e, caseNamed(t, "fallback_unwatched_interface"), 0, 10)
	recs := records(logs)
	require.Len(t, recs, 1)
	assert.Equal(t, verdict.TCPFallback, attr(recs[0], verdict.AttrVerdict))
	assert.Regexp(t, `^fallback_unwatched_interface-node1: NCCL appears to run over sockets on an interface no receiver watches: RDMA \d+ B/s and the watched netdevs \d+\.\d MB/s, while the GPUs move \d+\.\d GB/s and the host writes [01]\.\d\d bytes into memory per GPU byte`, recs[0].Body().Str())
	share, ok := recs[0].Attributes().Get(verdict.GPUTransmitShare)
	require.True(t, ok)
	assert.InDelta(t, 0.5, share.Double(), 0.05, "a collective sends as much as it receives")
}

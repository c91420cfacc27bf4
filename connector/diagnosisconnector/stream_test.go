package diagnosisconnector

import (
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
)

// toMetrics turns simulated points into what the receivers send: one resource per node (host.name,
// iclens.case as the demo's resource processor sets them), counters as cumulative sums.
func toMetrics(host, caseName string, pts []scenario.Point, at time.Time) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	if host != "" {
		rm.Resource().Attributes().PutStr("host.name", host)
	}
	if caseName != "" {
		rm.Resource().Attributes().PutStr("iclens.case", caseName)
	}
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	byName := map[string]pmetric.Metric{}
	ts := pcommon.NewTimestampFromTime(at)
	for _, p := range pts {
		m, ok := byName[p.Metric]
		if !ok {
			m = ms.AppendEmpty()
			m.SetName(p.Metric)
			if p.Counter {
				m.SetEmptySum().SetIsMonotonic(true)
				m.Sum().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			} else {
				m.SetEmptyGauge()
			}
			byName[p.Metric] = m
		}
		var dp pmetric.NumberDataPoint
		if p.Counter {
			dp = m.Sum().DataPoints().AppendEmpty()
			dp.SetIntValue(int64(p.Value))
		} else {
			dp = m.Gauge().DataPoints().AppendEmpty()
			dp.SetDoubleValue(p.Value)
		}
		dp.SetTimestamp(ts)
		for k, v := range p.Attrs {
			if k == "priority" {
				n, _ := strconv.Atoi(v)
				dp.Attributes().PutInt(k, int64(n))
			} else {
				dp.Attributes().PutStr(k, v)
			}
		}
	}
	return md
}

// testConfig evaluates every second, as the end-to-end test's collector does.
func testConfig() *Config {
	cfg := createDefaultConfig()
	cfg.Interval = time.Second
	cfg.Window = 3 * time.Second
	return cfg
}

func newTestEngine(t *testing.T, cfg *Config) *engine {
	t.Helper()
	require.NoError(t, cfg.Validate())
	e := engineFor(connectortest.NewNopSettings(typ), cfg)
	t.Cleanup(func() { require.NoError(t, (&diagnosis{e: e}).Shutdown(t.Context())) })
	return e
}

// run feeds node n of case c, sample by sample, and evaluates after each sample arrived (as the
// ticker does between two scrapes). It returns the verdicts holding after each sample, as
// "verdict" or "verdict@device", and the logs.
func run(t *testing.T, e *engine, c scenario.Case, n, samples int) ([][]string, []plog.Logs) {
	t.Helper()
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	host := scenario.HostName(c, scenario.Nodes[n])
	var out [][]string
	var logs []plog.Logs
	for i, pts := range c.Stream(n, samples, e.cfg.Interval.Seconds()) {
		at := start.Add(time.Duration(i) * e.cfg.Interval)
		e.ingest(toMetrics(host, c.Name, pts, at), at)
		md, ld := e.evaluate(at.Add(10 * time.Millisecond))
		out = append(out, holdingOf(md, host))
		logs = append(logs, ld)
	}
	return out, logs
}

// holdingOf lists the verdicts of host whose diagnosis.verdict point is 1.
func holdingOf(md pmetric.Metrics, host string) []string {
	var out []string
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		rm := rms.At(i)
		if h, _ := rm.Resource().Attributes().Get("host.name"); h.AsString() != host {
			continue
		}
		ms := rm.ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			if ms.At(j).Name() != "diagnosis.verdict" {
				continue
			}
			dps := ms.At(j).Gauge().DataPoints()
			for k := range dps.Len() {
				dp := dps.At(k)
				if dp.IntValue() != 1 {
					continue
				}
				v, _ := dp.Attributes().Get("verdict")
				d, _ := dp.Attributes().Get("device")
				out = append(out, label(v.AsString(), d.AsString()))
			}
		}
	}
	sort.Strings(out)
	return out
}

func label(verdict, device string) string {
	if device == "" {
		return verdict
	}
	return scenario.On(verdict, device)
}

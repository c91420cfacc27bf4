package diagnosisconnector

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
)

// toMetrics is what the receivers send (scenario.Metrics).
func toMetrics(host, caseName string, pts []scenario.Point, at time.Time) pmetric.Metrics {
	return scenario.Metrics(host, caseName, pts, at)
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
	e, err := engineFor(connectortest.NewNopSettings(typ), cfg)
	require.NoError(t, err)
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

// runNodes feeds every node of case c into one engine, sample by sample, as a gateway that
// receives both nodes' OTLP sees them (the cross-node verdicts read the peer), and evaluates after
// each sample. It returns, per node, the verdicts holding after each sample, and the logs.
func runNodes(t *testing.T, e *engine, c scenario.Case, samples int) ([len(scenario.Nodes)][][]string, []plog.Logs) {
	t.Helper()
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var streams [len(scenario.Nodes)][][]scenario.Point
	for n := range scenario.Nodes {
		streams[n] = c.Stream(n, samples, e.cfg.Interval.Seconds())
	}
	var out [len(scenario.Nodes)][][]string
	var logs []plog.Logs
	for i := range samples {
		at := start.Add(time.Duration(i) * e.cfg.Interval)
		for n, node := range scenario.Nodes {
			e.ingest(toMetrics(scenario.HostName(c, node), c.Name, streams[n][i], at), at)
		}
		md, ld := e.evaluate(at.Add(10 * time.Millisecond))
		for n, node := range scenario.Nodes {
			out[n] = append(out[n], holdingOf(md, scenario.HostName(c, node)))
		}
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

package lensviewexporter

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// pt is one data point of a synthetic batch, shaped as the receivers and the diagnosis
// connector emit it (receiver/*/metadata.yaml; the connector's contract in diagnosis.go).
type pt struct {
	name  string
	sum   bool // cumulative monotonic sum (else gauge)
	attrs map[string]string
	v     float64
	int   bool
}

// ioPoint is an interconnect.io point (cumulative bytes).
func ioPoint(component, direction, device string, v float64) pt {
	return pt{name: metricIO, sum: true, int: true, v: v, attrs: map[string]string{"component": component, "direction": direction, "device": device}}
}

func gauge(name string, v float64, kv ...string) pt {
	return pt{name: name, v: v, attrs: pairs(kv)}
}

func counter(name string, v float64, kv ...string) pt {
	return pt{name: name, sum: true, int: true, v: v, attrs: pairs(kv)}
}

func pairs(kv []string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// batch is one node's scrape at ts: the points' series all started at start.
func batch(host string, start, ts time.Time, pts ...pt) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	if host != "" {
		rm.Resource().Attributes().PutStr("host.name", host)
	}
	sm := rm.ScopeMetrics().AppendEmpty()
	for _, p := range pts {
		m := sm.Metrics().AppendEmpty()
		m.SetName(p.name)
		var dp pmetric.NumberDataPoint
		if p.sum {
			s := m.SetEmptySum()
			s.SetIsMonotonic(true)
			s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			dp = s.DataPoints().AppendEmpty()
			dp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		} else {
			dp = m.SetEmptyGauge().DataPoints().AppendEmpty()
		}
		dp.SetTimestamp(pcommon.NewTimestampFromTime(ts))
		if p.int {
			dp.SetIntValue(int64(p.v))
		} else {
			dp.SetDoubleValue(p.v)
		}
		for k, v := range p.attrs {
			dp.Attributes().PutStr(k, v)
		}
	}
	return md
}

// verdictChange is the connector's log record of a change.
func verdictChange(host string, ts time.Time, device, which, previous, body string) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("host.name", host)
	lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetTimestamp(pcommon.NewTimestampFromTime(ts))
	lr.Body().SetStr(body)
	lr.Attributes().PutStr(verdict.AttrVerdict, which)
	lr.Attributes().PutStr("previous_verdict", previous)
	lr.Attributes().PutStr("device", device)
	lr.Attributes().PutDouble(verdict.RDMAShare, 0)
	return ld
}

// testStore is a store on a clock the test moves.
type testStore struct {
	*store
	clock time.Time
}

func newTestStore(t testing.TB, mutate func(*Config)) *testStore {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	if mutate != nil {
		mutate(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ts := &testStore{store: newStore(cfg, zap.NewNop(), "this-host"), clock: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)}
	ts.now = func() time.Time { return ts.clock }
	return ts
}

// feed sends md as if it arrived at the point time.
func (ts *testStore) feed(at time.Time, md pmetric.Metrics) {
	ts.clock = at
	ts.consumeMetrics(md)
}

func (ts *testStore) view(t *testing.T, node string) nodeJSON {
	t.Helper()
	v, ok := ts.nodeView(node, 0, time.Second, nodestate.OwnerID{})
	if !ok {
		t.Fatalf("no node %q", node)
	}
	return v
}

func seriesByLabel(v nodeJSON, label string) (seriesJSON, bool) {
	for _, s := range v.Series {
		if s.Label == label {
			return s, true
		}
	}
	return seriesJSON{}, false
}

func labels(v nodeJSON) []string {
	var out []string
	for _, s := range v.Series {
		out = append(out, s.Label)
	}
	return out
}

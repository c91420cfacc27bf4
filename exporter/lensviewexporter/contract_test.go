package lensviewexporter

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"
	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// connectorOutput replays node1 of a simulated case (internal/scenario) through the real
// diagnosis connector, built by its factory as the collector builds it, and returns what it
// emitted.
func connectorOutput(t *testing.T, c scenario.Case, samples int) ([]pmetric.Metrics, []plog.Logs) {
	t.Helper()
	return connectorReplay(t, scenario.HostName(c, scenario.Nodes[0]), c.Name, c.Stream(0, samples, 1), nil)
}

// connectorReplay feeds a node's stream, a sample a second, through the real diagnosis connector
// (mutate changes its configuration). Each sample is followed by two of the connector's
// evaluations (the second one began after the sample was consumed), so the verdicts follow the
// samples, not the machine's speed.
func connectorReplay(t *testing.T, host, name string, stream [][]scenario.Point, mutate func(*diagnosisconnector.Config)) ([]pmetric.Metrics, []plog.Logs) {
	t.Helper()
	f := diagnosisconnector.NewFactory()
	cfg := f.CreateDefaultConfig().(*diagnosisconnector.Config)
	cfg.Interval = 10 * time.Millisecond
	cfg.Window, cfg.StaleAfter, cfg.PortRateMemory = 10*time.Minute, 10*time.Minute, 10*time.Minute
	if mutate != nil {
		mutate(cfg)
	}
	require.NoError(t, cfg.Validate())
	set := connectortest.NewNopSettings(component.MustNewType("diagnosis"))
	msink, lsink := new(consumertest.MetricsSink), new(consumertest.LogsSink)
	mc, err := f.CreateMetricsToMetrics(t.Context(), set, cfg, msink)
	require.NoError(t, err)
	lc, err := f.CreateMetricsToLogs(t.Context(), set, cfg, lsink)
	require.NoError(t, err)
	require.NoError(t, mc.Start(t.Context(), componenttest.NewNopHost()))
	require.NoError(t, lc.Start(t.Context(), componenttest.NewNopHost()))
	// The samples are a second apart and end now (the connector refuses points far from its clock).
	base := time.Now().Add(-time.Duration(len(stream)) * time.Second)
	for i, pts := range stream {
		md := scenario.Metrics(host, name, pts, base.Add(time.Duration(i)*time.Second))
		evaluated := len(msink.AllMetrics())
		require.NoError(t, mc.ConsumeMetrics(t.Context(), md))
		require.NoError(t, lc.ConsumeMetrics(t.Context(), md))
		require.Eventually(t, func() bool { return len(msink.AllMetrics()) >= evaluated+2 }, time.Minute, time.Millisecond,
			"two evaluations of the connector after sample %d", i)
	}
	require.NoError(t, mc.Shutdown(t.Context()))
	require.NoError(t, lc.Shutdown(t.Context()))
	return msink.AllMetrics(), lsink.AllLogs()
}

// TestDiagnosisContract: the view reads what the real diagnosis connector emits on a TCP
// fallback (internal/verdict is the contract both are written against): the node's verdict and
// its evidence as the connector's last evaluation had them, and every verdict change with its
// sentence and the evidence attributes the connector put on the record.
func TestDiagnosisContract(t *testing.T) {
	c := caseFor(t, "transition_tcp_fallback")
	metrics, logs := connectorOutput(t, c, scenario.TransitionFault+10)
	st := newTestStore(t, nil)
	st.clock = time.Now()
	for _, md := range metrics {
		st.consumeMetrics(md)
	}
	for _, ld := range logs {
		st.consumeLogs(ld)
	}
	host := scenario.HostName(c, scenario.Nodes[0])

	// What the connector said last: its node verdict that holds and its node evidence.
	last := metrics[len(metrics)-1]
	wantVerdict, wantEvidence := "", map[string]float64{}
	rm := last.ResourceMetrics().At(0)
	ms := rm.ScopeMetrics().At(0).Metrics()
	for i := range ms.Len() {
		dps := ms.At(i).Gauge().DataPoints()
		for j := range dps.Len() {
			a := dps.At(j).Attributes()
			if dev, _ := a.Get(verdict.AttrDevice); dev.Str() != "" {
				continue
			}
			switch ms.At(i).Name() {
			case verdict.MetricVerdict:
				if dps.At(j).IntValue() == 1 {
					v, _ := a.Get(verdict.AttrVerdict)
					wantVerdict = v.Str()
				}
			case verdict.MetricEvidence:
				r, _ := a.Get(verdict.AttrRatio)
				wantEvidence[r.Str()] = dps.At(j).DoubleValue()
			}
		}
	}
	require.Equal(t, verdict.TCPFallback, wantVerdict, "the replay ends in the fallback")

	// The page's JSON, as the browser gets it.
	b, err := json.Marshal(st.view(t, host))
	require.NoError(t, err)
	var page struct {
		Diagnosis struct {
			Present  bool               `json:"present"`
			Verdict  string             `json:"verdict"`
			Sentence string             `json:"sentence"`
			Evidence map[string]float64 `json:"evidence"`
			Log      []struct {
				Verdict  string             `json:"verdict"`
				Previous string             `json:"previous_verdict"`
				Sentence string             `json:"sentence"`
				Evidence map[string]float64 `json:"evidence"`
			} `json:"log"`
		} `json:"diagnosis"`
		Observed map[string]float64 `json:"observed"`
	}
	require.NoError(t, json.Unmarshal(b, &page))
	d := page.Diagnosis
	assert.True(t, d.Present)
	assert.Equal(t, wantVerdict, d.Verdict)
	assert.Equal(t, wantEvidence, d.Evidence)

	var changes []plog.LogRecord
	for _, ld := range logs {
		for i := range ld.ResourceLogs().Len() {
			lrs := ld.ResourceLogs().At(i).ScopeLogs().At(0).LogRecords()
			for j := range lrs.Len() {
				if v, _ := lrs.At(j).Attributes().Get(verdict.AttrVerdict); v.Str() != "" {
					changes = append(changes, lrs.At(j))
				}
			}
		}
	}
	require.Len(t, changes, 2, "healthy, then the fallback")
	require.Len(t, d.Log, len(changes))
	for i, lr := range changes {
		v, _ := lr.Attributes().Get(verdict.AttrVerdict)
		p, _ := lr.Attributes().Get(verdict.AttrPrevious)
		assert.Equal(t, v.Str(), d.Log[i].Verdict)
		assert.Equal(t, p.Str(), d.Log[i].Previous)
		assert.Equal(t, lr.Body().Str(), d.Log[i].Sentence)
		ev := verdict.Evidence(lr.Attributes())
		require.NotEmpty(t, ev)
		assert.Equal(t, ev, d.Log[i].Evidence, "the evidence of the change, as the connector wrote it")
	}
	assert.Equal(t, changes[1].Body().Str(), d.Sentence)

	// The view's own quotients are not named as the connector's ratios: the page shows both.
	for k := range page.Observed {
		assert.False(t, verdict.IsRatio(k), "observed %s has the name of a connector ratio", k)
	}
}

func caseFor(t *testing.T, name string) scenario.Case {
	t.Helper()
	c, ok := scenario.Named(name)
	if !ok {
		t.Fatalf("no simulated case %s", name)
	}
	return c
}

package metrictest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

func TestFind(t *testing.T) {
	md := pmetric.NewMetrics()
	ms := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics()
	sum := ms.AppendEmpty()
	sum.SetName("interconnect.io")
	dp := sum.SetEmptySum().DataPoints().AppendEmpty()
	dp.SetIntValue(42)
	dp.Attributes().PutStr("component", "rnic")
	dp.Attributes().PutInt("numa.node", 1)
	g := ms.AppendEmpty()
	g.SetName("rnic.port.state")
	g.SetEmptyGauge().DataPoints().AppendEmpty().SetIntValue(4)

	got, ok := Find(md, "interconnect.io", map[string]any{"component": "rnic", "numa.node": int64(1)})
	assert.True(t, ok)
	assert.Equal(t, int64(42), got.IntValue())
	_, ok = Find(md, "interconnect.io", map[string]any{"component": "netdev"})
	assert.False(t, ok)
	assert.Len(t, Points(md, "rnic.port.state"), 1)
	assert.Empty(t, Points(md, "missing"))
}

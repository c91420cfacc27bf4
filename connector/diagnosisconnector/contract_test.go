package diagnosisconnector

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector/internal/metadata"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// TestContractIsTheMetadata: the verdicts and ratios of the contract the view reads
// (internal/verdict) are the enums of metadata.yaml the connector's metrics are generated from,
// and what the connector emits on a fallback uses only the contract's names.
func TestContractIsTheMetadata(t *testing.T) {
	assert.ElementsMatch(t, verdict.Names(), slices.Collect(maps.Keys(metadata.MapAttributeVerdict)))
	assert.ElementsMatch(t, verdict.Ratios(), slices.Collect(maps.Keys(metadata.MapAttributeRatio)))

	e := newTestEngine(t, testConfig())
	c := caseNamed(t, "transition_tcp_fallback")
	host := "node1"
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var points, changes int
	for i, pts := range c.Stream(0, 60, e.cfg.Interval.Seconds()) {
		at := start.Add(time.Duration(i) * e.cfg.Interval)
		e.ingest(toMetrics(host, c.Name, pts, at), at)
		md, ld := e.evaluate(at.Add(10 * time.Millisecond))
		rms := md.ResourceMetrics()
		for i := range rms.Len() {
			ms := rms.At(i).ScopeMetrics().At(0).Metrics()
			for j := range ms.Len() {
				m := ms.At(j)
				require.Contains(t, []string{verdict.MetricVerdict, verdict.MetricEvidence}, m.Name())
				dps := m.Gauge().DataPoints()
				for k := range dps.Len() {
					points++
					a := dps.At(k).Attributes()
					_, ok := a.Get(verdict.AttrDevice)
					assert.True(t, ok, "every point names its device")
					for _, k := range verdict.OwnerAttrs() {
						o, ok := a.Get(k)
						assert.True(t, ok && o.Str() == "", "every point carries %s, empty without per_owner", k)
					}
					if m.Name() == verdict.MetricVerdict {
						v, _ := a.Get(verdict.AttrVerdict)
						assert.Contains(t, verdict.Names(), v.Str())
					} else {
						r, _ := a.Get(verdict.AttrRatio)
						assert.True(t, verdict.IsRatio(r.Str()), r.Str())
						assert.Equal(t, pmetric.NumberDataPointValueTypeDouble, dps.At(k).ValueType())
					}
				}
			}
		}
		for _, lr := range records([]plog.Logs{ld}) {
			changes++
			lr.Attributes().Range(func(k string, v pcommon.Value) bool {
				switch k {
				case verdict.AttrVerdict, verdict.AttrPrevious, verdict.AttrDevice, verdict.AttrOwnerKind, verdict.AttrJobID, verdict.AttrK8sNamespace, verdict.AttrK8sPod:
				default:
					assert.True(t, verdict.IsRatio(k), "log attribute %s is neither a contract attribute nor a ratio", k)
					assert.Equal(t, pcommon.ValueTypeDouble, v.Type())
				}
				return true
			})
			assert.NotEmpty(t, verdict.Evidence(lr.Attributes()), "a verdict change carries its evidence")
		}
	}
	assert.Positive(t, points)
	assert.Positive(t, changes)
}

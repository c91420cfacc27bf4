package nodestate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// burstScrape is one scrape of a port with the rnic receiver's fast sampler on
// (receiver/rnicreceiver metadata.yaml: rnic.burst.peak_rate, a gauge by component, direction,
// device and burst.window; rnic.burst.time_above, cumulative seconds by burst.share), beside the
// port's bytes and link rate, which make it a port of the node.
func burstScrape(sec int64, bytes int64, peak float64, above map[string]float64) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr(HostNameKey, "node1")
	sm := rm.ScopeMetrics().AppendEmpty()
	ts := pcommon.Timestamp(sec * 1e9)
	port := func(a pcommon.Map, component, direction string) {
		a.PutStr(AttrComponent, component)
		a.PutStr(AttrDirection, direction)
		a.PutStr(AttrDevice, "mlx5_0/1")
	}
	io := sm.Metrics().AppendEmpty()
	io.SetName(MetricIO)
	io.SetEmptySum().SetIsMonotonic(true)
	dp := io.Sum().DataPoints().AppendEmpty()
	dp.SetTimestamp(ts)
	dp.SetIntValue(bytes)
	port(dp.Attributes(), RNIC, Transmit)

	rate := sm.Metrics().AppendEmpty()
	rate.SetName(MetricPortRate)
	rdp := rate.SetEmptyGauge().DataPoints().AppendEmpty()
	rdp.SetTimestamp(ts)
	rdp.SetDoubleValue(12.5e9)
	rdp.Attributes().PutStr(AttrDevice, "mlx5_0/1")

	pk := sm.Metrics().AppendEmpty()
	pk.SetName(MetricBurstPeak)
	pk.SetEmptyGauge()
	for _, c := range []string{RNIC, Netdev} {
		dp := pk.Gauge().DataPoints().AppendEmpty()
		dp.SetTimestamp(ts)
		dp.SetDoubleValue(peak)
		if c == Netdev {
			dp.SetDoubleValue(2 * peak) // the port's IP bytes, not its RDMA bytes
		}
		port(dp.Attributes(), c, Transmit)
		dp.Attributes().PutStr(AttrBurstWindow, "10ms")
	}
	ab := sm.Metrics().AppendEmpty()
	ab.SetName(MetricBurstTimeAbove)
	ab.SetEmptySum().SetIsMonotonic(true)
	for share, secs := range above {
		dp := ab.Sum().DataPoints().AppendEmpty()
		dp.SetTimestamp(ts)
		dp.SetDoubleValue(secs)
		port(dp.Attributes(), RNIC, Transmit)
		dp.Attributes().PutStr(AttrBurstShare, share)
	}
	return md
}

// TestPortBursts: a port's peak window rate and its share of time above each share of the line
// rate, from the fast sampler's metrics: the time above as the counter's seconds per second over
// the window, the peak as the newest gauge; a netdev's bursts are not the port's.
func TestPortBursts(t *testing.T) {
	n := New("node1", Limits{})
	for _, md := range []pmetric.Metrics{
		burstScrape(10, 0, 11e9, map[string]float64{"0.5": 1, "0.9": 0.5}),
		// 10 s later: 0.7 s more at or above half the line, 0.4 s more at or above 90 %.
		burstScrape(20, 8e9, 12.4e9, map[string]float64{"0.5": 1.7, "0.9": 0.9}),
	} {
		rm := md.ResourceMetrics().At(0)
		n.Ingest(rm.Resource(), rm.ScopeMetrics(), 20e9)
	}
	st := n.At(20e9, 30*time.Second, 5*time.Minute)
	p, ok := st.Port("mlx5_0/1")
	require.True(t, ok)
	assert.Equal(t, 12.4e9, p.TxPeak)
	assert.Zero(t, p.RxPeak)
	assert.Equal(t, "10ms", p.PeakWindow)
	above, ok := p.TimeAbove(Transmit, "0.9")
	assert.True(t, ok)
	assert.InDelta(t, 0.04, above, 1e-12)
	above, _ = p.TimeAbove(Transmit, "0.5")
	assert.InDelta(t, 0.07, above, 1e-12)
	_, ok = p.TimeAbove(Receive, "0.9")
	assert.False(t, ok, "no receive direction reported")
	assert.InDelta(t, 0.8e9, p.Tx, 1e-3, "the average beside the bursts")
}

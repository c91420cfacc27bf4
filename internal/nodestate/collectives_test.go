package nodestate

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// ncclBatch is one scrape of the nccl receiver (its metadata.yaml: nccl.collective.* per
// communicator, rank, collective and bucket; nccl.ras.* per communicator) and the gpu receiver's
// gpu.info, as the receivers emit them.
type ncclBatch struct {
	at      int64
	records int64 // nccl.collective.samples of comm 0xa rank 0 AllReduce >=4GiB
	busbw   float64
	ops     int64 // nccl.ras.operations max of comm 0xa AllReduce
	dead    int64
}

func (b ncclBatch) metrics() pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr(HostNameKey, "node1")
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	ts := pcommon.Timestamp(b.at)
	coll := func(dp pmetric.NumberDataPoint, rank int64, bucket, bus string) {
		dp.SetTimestamp(ts)
		a := dp.Attributes()
		a.PutStr(AttrCommID, "0xa")
		a.PutStr(AttrCommName, "unknown")
		a.PutInt(AttrCommSize, 4)
		a.PutInt(AttrRank, rank)
		a.PutStr(AttrCollective, "AllReduce")
		a.PutStr(AttrMessageSize, bucket)
		a.PutStr(AttrBusID, bus)
	}
	s := ms.AppendEmpty()
	s.SetName(MetricCollSamples)
	sum := s.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp := sum.DataPoints().AppendEmpty()
	coll(dp, 0, ">=4GiB", "0000:1a:00.0")
	dp.SetIntValue(b.records)

	g := ms.AppendEmpty()
	g.SetName(MetricCollBusBandwidth)
	gauge := g.SetEmptyGauge()
	// Rank 1 on the same node, another GPU, slower; a small message far slower still, which
	// says nothing about the links.
	for _, r := range []struct {
		rank   int64
		bucket string
		bus    string
		v      float64
	}{{1, ">=4GiB", "0000:1b:00.0", b.busbw / 2}, {0, ">=4GiB", "0000:1a:00.0", b.busbw}, {0, "<64KiB", "0000:1a:00.0", 0.01}} {
		dp := gauge.DataPoints().AppendEmpty()
		coll(dp, r.rank, r.bucket, r.bus)
		dp.SetDoubleValue(r.v)
	}

	rk := ms.AppendEmpty()
	rk.SetName(MetricRASRanks)
	rg := rk.SetEmptyGauge()
	for state, v := range map[string]int64{"running": 4 - b.dead, "dead": b.dead} {
		dp := rg.DataPoints().AppendEmpty()
		dp.SetTimestamp(ts)
		dp.Attributes().PutStr(AttrCommID, "0xa")
		dp.Attributes().PutInt(AttrCommSize, 4)
		dp.Attributes().PutStr(AttrRankState, state)
		dp.SetIntValue(v)
	}
	op := ms.AppendEmpty()
	op.SetName(MetricRASOperations)
	og := op.SetEmptyGauge()
	for bound, v := range map[string]int64{"min": b.ops - 1, "max": b.ops} {
		dp := og.DataPoints().AppendEmpty()
		dp.SetTimestamp(ts)
		dp.Attributes().PutStr(AttrCommID, "0xa")
		dp.Attributes().PutStr(AttrCollective, "AllReduce")
		dp.Attributes().PutStr(AttrBound, bound)
		dp.SetIntValue(v)
	}
	gi := ms.AppendEmpty()
	gi.SetName(MetricGPUInfo)
	gdp := gi.SetEmptyGauge().DataPoints().AppendEmpty()
	gdp.SetTimestamp(ts)
	gdp.Attributes().PutStr(AttrDevice, "gpu0")
	gdp.Attributes().PutStr(AttrBusID, "0000:1a:00.0")
	gdp.SetDoubleValue(1)
	return md
}

// TestCollectivesReadTheNCCLReceiver: a communicator's state is its large messages' best newest
// bus bandwidth over the node's ranks (in bytes/s), its records' irate, its lowest rank's GPU
// joined to the gpu receiver's name by PCI address, the job's ranks by RAS state and the
// operation counts of the two newest RAS samples.
func TestCollectivesReadTheNCCLReceiver(t *testing.T) {
	n := New("node1", Limits{})
	for _, b := range []ncclBatch{{at: 1e9, records: 10, busbw: 11.5, ops: 100}, {at: 2e9, records: 12, busbw: 5.1, ops: 103, dead: 1}} {
		md := b.metrics()
		n.Ingest(md.ResourceMetrics().At(0).Resource(), md.ResourceMetrics().At(0).ScopeMetrics(), b.at)
	}
	st := n.At(2e9, 3*time.Second, time.Minute)
	require.Len(t, st.Collectives, 1)
	c := st.Collectives[0]
	assert.Equal(t, "0xa", c.Comm)
	assert.Equal(t, 4, c.Size)
	assert.Equal(t, "0000:1a:00.0", c.Bus, "the lowest rank's GPU")
	assert.Equal(t, "gpu0", c.GPU)
	op, ok := c.Op("AllReduce")
	require.True(t, ok)
	assert.InDelta(t, 5.1e9, op.BusBandwidth, 1, "the newest record's, the best rank's, large messages only")
	assert.InDelta(t, 2.0, op.Records, 1e-9, "2 records in 1 s")
	assert.Equal(t, 1.0, c.Failed())
	assert.Equal(t, 3.0, c.Ranks["running"])
	assert.Equal(t, 103.0, c.Operations)
	assert.Equal(t, 100.0, c.OperationsBefore)
	assert.Equal(t, int64(2e9), c.OperationsAt)

	// Beyond the lookback the communicator is gone; without two records in the window its
	// records/s is unknown.
	assert.Empty(t, n.At(2e9+int64(time.Minute), 3*time.Second, time.Minute).Collectives)
	st = n.At(4.5e9, 3*time.Second, time.Minute)
	op, _ = st.Collectives[0].Op("AllReduce")
	assert.True(t, math.IsNaN(op.Records))
}

// TestCollectivesAreRead: the nccl receiver's series are part of a node's state.
func TestCollectivesAreRead(t *testing.T) {
	for _, m := range []string{MetricCollBusBandwidth, MetricCollSamples, MetricRASRanks, MetricRASOperations} {
		assert.True(t, Reads(m), m)
	}
}

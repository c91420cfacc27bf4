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

// batch builds one scrape of a node: interconnect.io counters and interconnect.owner points.
type batch struct {
	md  pmetric.Metrics
	sm  pmetric.ScopeMetrics
	io  pmetric.NumberDataPointSlice
	own pmetric.NumberDataPointSlice
	ts  pcommon.Timestamp
}

func newBatch(sec int64) *batch {
	b := &batch{md: pmetric.NewMetrics(), ts: pcommon.Timestamp(sec * 1e9)}
	rm := b.md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr(HostNameKey, "node1")
	b.sm = rm.ScopeMetrics().AppendEmpty()
	io := b.sm.Metrics().AppendEmpty()
	io.SetName(MetricIO)
	io.SetEmptySum().SetIsMonotonic(true)
	b.io = io.Sum().DataPoints()
	own := b.sm.Metrics().AppendEmpty()
	own.SetName(MetricOwner)
	b.own = own.SetEmptyGauge().DataPoints()
	return b
}

func (b *batch) counter(component, direction, device, bus string, v int64) {
	dp := b.io.AppendEmpty()
	dp.SetTimestamp(b.ts)
	dp.SetIntValue(v)
	a := dp.Attributes()
	a.PutStr(AttrComponent, component)
	a.PutStr(AttrDirection, direction)
	a.PutStr(AttrDevice, device)
	a.PutStr(AttrBusID, bus)
}

func (b *batch) owner(component, device, bus, kind, job string, v int64) {
	dp := b.own.AppendEmpty()
	dp.SetTimestamp(b.ts)
	dp.SetIntValue(v)
	a := dp.Attributes()
	a.PutStr(AttrComponent, component)
	a.PutStr(AttrDevice, device)
	a.PutStr(AttrBusID, bus)
	a.PutStr(AttrOwnerKind, kind)
	a.PutStr(AttrOwnerSource, "slurm")
	a.PutStr(AttrJobID, job)
	for _, k := range []string{AttrK8sNamespace, AttrK8sPod, AttrK8sContainer, AttrUserName, AttrJobPartition} {
		a.PutStr(k, "")
	}
}

func (b *batch) gauge(metric, device, bus string) {
	m := b.sm.Metrics().AppendEmpty()
	m.SetName(metric)
	dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetTimestamp(b.ts)
	dp.SetIntValue(1)
	dp.Attributes().PutStr(AttrDevice, device)
	dp.Attributes().PutStr(AttrBusID, bus)
}

func (b *batch) ingest(n *Node) {
	rm := b.md.ResourceMetrics().At(0)
	n.Ingest(rm.Resource(), rm.ScopeMetrics(), int64(b.ts))
}

// twoJobs is a node whose gpu0 and mlx5_0 are job 4711's and whose gpu1 and mlx5_1 are
// job second's (endedSecond's ownership of them just ended, when set); host memory is the node's and a root complex total is shared. Every counter grows
// by its rate (bytes/s) times t.
func twoJobs(t int64, second, endedSecond string) *batch {
	b := newBatch(t)
	b.counter(GPUPCIe, Transmit, "gpu0", "0000:1b:00.0", 100*t)
	b.counter(GPUPCIe, Transmit, "gpu1", "0000:9b:00.0", 200*t)
	b.counter(RNIC, Transmit, "mlx5_0/1", "0000:1c:00.0", 1000*t)
	b.counter(RNIC, Transmit, "mlx5_1/1", "0000:9c:00.0", 2000*t)
	b.counter(CPUPCIe, Receive, "socket0/iio1", "0000:15:01.0", 10*t)
	b.counter(CPUPCIe, Receive, "socket0/iio0", "", 7*t)
	b.counter(CPUMemory, "read", "socket0/imc", "", 5000*t)
	// socket1/iio2 holds gpu1 alone (second's), socket1/iio3 gpu1 and an NVMe drive nobody owns.
	b.counter(CPUPCIe, Receive, "socket1/iio2", "", 20*t)
	b.counter(CPUPCIe, Receive, "socket1/iio3", "", 3*t)
	b.gauge(MetricPCIeDevice, "socket1/iio2", "0000:9b:00.0")
	b.gauge(MetricPCIeDevice, "socket1/iio3", "0000:9c:00.0")
	b.gauge(MetricPCIeDevice, "socket1/iio3", "0000:a0:00.0")
	b.owner(GPUPCIe, "gpu0", "0000:1b:00.0", OwnerJob, "4711", 1)
	b.owner(RNIC, "mlx5_0", "0000:1c:00.0", OwnerJob, "4711", 1)
	b.owner(CPUPCIe, "0000:15:01.0", "0000:15:01.0", OwnerJob, "4711", 1)
	b.owner(GPUPCIe, "gpu1", "0000:9b:00.0", OwnerJob, second, 1)
	b.owner(RNIC, "mlx5_1", "0000:9c:00.0", OwnerJob, second, 1)
	if endedSecond != "" {
		b.owner(GPUPCIe, "gpu1", "0000:9b:00.0", OwnerJob, endedSecond, 0)
		b.owner(RNIC, "mlx5_1", "0000:9c:00.0", OwnerJob, endedSecond, 0)
	}
	b.owner(CPUPCIe, "", "", OwnerShared, "", 1)
	b.owner(CPUMemory, "", "", OwnerNode, "", 1)
	return b
}

// TestOwnersSplitTheNodeBytes: each job's state holds the rates of exactly its own instances, the
// shared and the node's bytes are in no job's, and the node's totals are untouched by owners.
func TestOwnersSplitTheNodeBytes(t *testing.T) {
	n := New("node1", Limits{})
	twoJobs(1, "4712", "").ingest(n)
	twoJobs(2, "4712", "").ingest(n)
	st := n.At(2e9, 30*time.Second, 5*time.Minute)

	assert.Equal(t, "4711", st.OwnerOf(GPUPCIe, "0000:1b:00.0").JobID)
	assert.Equal(t, "gpu1", st.OwnerOf(GPUPCIe, "0000:9b:00.0").Device)
	assert.Equal(t, OwnerNode, st.OwnerOf(CPUMemory, "").Kind)
	require.Equal(t, []OwnerID{{Kind: OwnerJob, JobID: "4711"}, {Kind: OwnerJob, JobID: "4712"}}, st.OwnerIDs())

	a, b := st.ByOwner[OwnerID{Kind: OwnerJob, JobID: "4711"}], st.ByOwner[OwnerID{Kind: OwnerJob, JobID: "4712"}]
	assert.Equal(t, 100.0, a.IO(GPUPCIe))
	assert.Equal(t, 1000.0, a.IO(RNIC))
	assert.Equal(t, 10.0, a.PathWrite, "job 4711's own root port")
	assert.True(t, a.PathMapped)
	assert.False(t, a.Has(CPUMemory), "host memory is the node's")
	assert.Equal(t, 200.0, b.IO(GPUPCIe))
	assert.Equal(t, 2000.0, b.IO(RNIC))
	assert.Equal(t, 20.0, b.PathWrite, "job 4712's own IIO stack, not the one it shares with an unowned drive")
	assert.True(t, b.PathMapped)

	// Every owned byte is in one owner's state; the rest (shared root complex, node memory) in none.
	for _, c := range []string{GPUPCIe, RNIC} {
		assert.Equal(t, st.IO(c), a.IO(c)+b.IO(c), c)
	}
	assert.Equal(t, 40.0, st.IO(CPUPCIe), "the node's totals keep every byte")
}

// TestOwnerSwitchShowsAtTheNextSample: when job 4712 ends on gpu1 and mlx5_1 and job 4713 takes
// them, the sample that carries the switch (the old owner 0, the new 1) moves the bytes to 4713 at
// once, not after the old series' lookback.
func TestOwnerSwitchShowsAtTheNextSample(t *testing.T) {
	n := New("node1", Limits{})
	twoJobs(1, "4712", "").ingest(n)
	twoJobs(2, "4712", "").ingest(n)
	twoJobs(3, "4713", "4712").ingest(n)
	st := n.At(3e9, 30*time.Second, 5*time.Minute)
	assert.Equal(t, "4713", st.OwnerOf(RNIC, "0000:9c:00.0").JobID)
	_, old := st.ByOwner[OwnerID{Kind: OwnerJob, JobID: "4712"}]
	assert.False(t, old, "the ended job owns nothing")
	assert.Equal(t, 2000.0, st.ByOwner[OwnerID{Kind: OwnerJob, JobID: "4713"}].IO(RNIC))

	// The 0 lost (a missed scrape): both series hold 1, and the newer owner wins.
	n = New("node1", Limits{})
	twoJobs(1, "4712", "").ingest(n)
	twoJobs(2, "4712", "").ingest(n)
	later := twoJobs(3, "4713", "")
	later.ingest(n)
	st = n.At(3e9, 30*time.Second, 5*time.Minute)
	assert.Equal(t, "4713", st.OwnerOf(GPUPCIe, "0000:9b:00.0").JobID)
}

// TestNoOwnersNoOwnerState: without the owner receiver a State has no owners and the same rates.
func TestNoOwnersNoOwnerState(t *testing.T) {
	n := New("node1", Limits{})
	for sec := int64(1); sec <= 2; sec++ {
		b := newBatch(sec)
		b.counter(RNIC, Transmit, "mlx5_0/1", "0000:1c:00.0", 1000*sec)
		b.ingest(n)
	}
	st := n.At(2e9, 30*time.Second, 5*time.Minute)
	assert.Empty(t, st.Owners)
	assert.Empty(t, st.ByOwner)
	assert.Equal(t, 1000.0, st.IO(RNIC))
}

// TestOwnerWithoutRootPortHasNoPath: an owner none of whose root ports or stacks is its own has
// no path write (NaN, decides nothing), not the node's.
func TestOwnerWithoutRootPortHasNoPath(t *testing.T) {
	n := New("node1", Limits{})
	for sec := int64(1); sec <= 2; sec++ {
		b := newBatch(sec)
		b.counter(RNIC, Transmit, "mlx5_0/1", "0000:1c:00.0", 1000*sec)
		b.counter(CPUPCIe, Receive, "socket0/iio1", "", 10*sec)
		b.owner(RNIC, "mlx5_0", "0000:1c:00.0", OwnerPod, "", 1)
		b.ingest(n)
	}
	st := n.At(2e9, 30*time.Second, 5*time.Minute)
	o := st.ByOwner[OwnerID{Kind: OwnerPod}]
	require.NotNil(t, o)
	assert.True(t, math.IsNaN(o.PathWrite))
	assert.False(t, o.PathMapped)
}

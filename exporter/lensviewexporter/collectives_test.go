package lensviewexporter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
)

// TestCollectivesOnTheBandwidthAxis: the nccl receiver's bus bandwidth of a collective type is a
// series of the node's bandwidth chart, in bytes/s, one point per scrape: the simulated TCP
// fallback's 2.8 GB/s AllReduce beside the netdev that carries it.
func TestCollectivesOnTheBandwidthAxis(t *testing.T) {
	st := newTestStore(t, nil)
	c := caseFor(t, "nccl_tcp_fallback")
	host := scenario.HostName(c, scenario.Nodes[0])
	start := st.clock
	for i, pts := range c.Stream(0, 6, 1) {
		at := start.Add(time.Duration(i) * time.Second)
		st.feed(at, scenario.Metrics(host, c.Name, pts, at))
	}
	v := st.view(t, host)
	s, ok := seriesByLabel(v, "NCCL AllReduce("+scenario.CommID(c)+") bus bw")
	require.True(t, ok, "%v", labels(v))
	assert.Equal(t, "bytes", s.Axis)
	assert.Equal(t, "By/s", s.Unit)
	assert.Equal(t, "nccl", s.Component)
	require.Len(t, s.V, 6, "one point a scrape")
	for _, x := range s.V {
		assert.InDelta(t, 2.8e9, x, 1e3)
	}
	_, ok = seriesByLabel(v, "NET("+scenario.Netdev+")[TX]")
	assert.True(t, ok, "beside the netdev")
}

// TestSmallMessagesAreNotDrawn: a small message's bus bandwidth (latency-bound) is not the
// collective's; the larger of two ranks' at one scrape is.
func TestSmallMessagesAreNotDrawn(t *testing.T) {
	st := newTestStore(t, nil)
	at := st.clock
	bw := func(rank, bucket string, v float64) pt {
		return gauge("nccl.collective.last_bus_bandwidth", v, "nccl.comm.id", "0xa", "nccl.rank", rank, "nccl.collective", "AllGather", "nccl.message_size", bucket)
	}
	st.feed(at, batch("node1", at, at, bw("0", "<64KiB", 0.01), bw("0", "1GiB-4GiB", 20), bw("1", "1GiB-4GiB", 30)))
	v := st.view(t, "node1")
	s, ok := seriesByLabel(v, "NCCL AllGather(0xa) bus bw")
	require.True(t, ok, "%v", labels(v))
	assert.Equal(t, []float64{30e9}, s.V)
}

package lensviewexporter

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
)

// demoNode is one scrape of a node of the demo (internal/scenario: a ConnectX-6 Dx port and its
// netdev, a 2-socket Skylake-SP with 6 IIO stacks and 6 memory controllers, one GPU), with the
// metrics the view keeps: interconnect.io, GPU memory activity, the port's link and congestion
// counters, PFC pause frames on 8 priorities, the GPUDirect readiness, and the diagnosis verdict
// and evidence of the connector.
func demoNode(host string, start, at time.Time, i int) pmetric.Metrics {
	f := float64(i)
	pts := []pt{
		ioPoint("rnic", "transmit", "mlx5_0/1", f*10.3e9), ioPoint("rnic", "receive", "mlx5_0/1", f*10.3e9),
		ioPoint("netdev", "transmit", "ens1f0np0", f*1e6), ioPoint("netdev", "receive", "ens1f0np0", f*1e6),
		ioPoint("gpu_pcie", "transmit", "gpu0", f*10.3e9), ioPoint("gpu_pcie", "receive", "gpu0", f*10.4e9),
		gauge(metricDRAMActive, 0.55, "device", "gpu0"),
		gauge(metricPortRate, 12.5e9, "device", "mlx5_0/1"), gauge(metricPortWidth, 4, "device", "mlx5_0/1"),
		gauge(metricPortState, 4, "device", "mlx5_0/1"),
		counter(metricCNP, f*10, "device", "mlx5_0/1", "counter", "np_cnp_sent"),
		counter(metricCNP, f*10, "device", "mlx5_0/1", "counter", "rp_cnp_handled"),
		counter(metricCNP, 0, "device", "mlx5_0/1", "counter", "rp_cnp_ignored"),
		counter(metricECN, f*10, "device", "mlx5_0/1"), counter(metricXmitWait, f*1e3, "device", "mlx5_0/1"),
		gauge(metricTopoDist, 1, "gpu.pci.bus_id", "0000:1a:00.0", "device", "mlx5_0", "pcie.path", "PIX"),
		gauge(metricTopoReady, 1, "gpu.pci.bus_id", "0000:1a:00.0", "device", "mlx5_0"),
		gauge(metricTopoPeerMem, 1, "mechanism", "nvidia_peermem"),
		gauge(metricVerdict, 1, "verdict", "healthy_gpudirect", "device", ""),
		gauge(metricVerdict, 0, "verdict", "tcp_fallback", "device", ""),
		gauge(metricEvidence, 1, "ratio", "rdma_share_of_network", "device", ""),
	}
	for s := range 2 {
		for k := range 3 {
			pts = append(pts,
				ioPoint("cpu_pcie", "receive", fmt.Sprintf("socket%d/iio%d", s, k), f*1e7),
				ioPoint("cpu_pcie", "transmit", fmt.Sprintf("socket%d/iio%d", s, k), f*1e7),
				ioPoint("cpu_memory", "read", fmt.Sprintf("socket%d/imc%d", s, k), f*1e8),
				ioPoint("cpu_memory", "write", fmt.Sprintf("socket%d/imc%d", s, k), f*1e8))
		}
	}
	for p := range 8 {
		for _, dir := range []string{"receive", "transmit"} {
			pts = append(pts, counter(metricPFCPause, 0, "device", "ens1f0np0", "direction", dir, "priority", fmt.Sprint(p)))
		}
	}
	return batch(host, start, at, pts...)
}

// heapAfter fills a store with nodes x minutes of the demo at one scrape a second and returns
// the heap it holds, after a GC, and the number of series.
func heapAfter(t testing.TB, nodes int, minutes int) (heap uint64, series int) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	st := newTestStore(t, nil)
	start := st.clock
	for i := range minutes * 60 {
		at := start.Add(time.Duration(i) * time.Second)
		for n := range nodes {
			st.feed(at, demoNode(fmt.Sprintf("case%d-node%d", n/2, n%2+1), start, at, i))
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	for _, n := range st.nodes {
		series += len(n.series)
	}
	runtime.KeepAlive(st)
	return after.HeapAlloc - before.HeapAlloc, series
}

// heapBound is the bound the README states: the demo's 14 nodes for 30 minutes (the default
// window) at one point a second.
const heapBound = 16 << 20

// TestMemoryOf14NodesFor30Minutes: the view's heap with the demo's 14 nodes over its whole
// window stays under heapBound, and does not grow once the window is full.
func TestMemoryOf14NodesFor30Minutes(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 30 minutes of 14 nodes")
	}
	heap, series := heapAfter(t, 14, 30)
	t.Logf("14 nodes, 30 minutes, %d series: %.1f MiB heap", series, float64(heap)/(1<<20))
	assert.Less(t, heap, uint64(heapBound))
	longer, _ := heapAfter(t, 14, 40)
	t.Logf("14 nodes, 40 minutes: %.1f MiB heap", float64(longer)/(1<<20))
	assert.Less(t, longer, uint64(heapBound), "rings are bounded by the window")
}

// BenchmarkMemory14Nodes30Minutes reports the heap of the demo's 14 nodes over 30 minutes
// (heap-MiB) and the cost of taking one scrape of one node (ns/op of the fill divided out).
//
//	go test ./exporter/lensviewexporter -run '^$' -bench Memory -benchtime 1x
func BenchmarkMemory14Nodes30Minutes(b *testing.B) {
	for b.Loop() {
		heap, series := heapAfter(b, 14, 30)
		b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
		b.ReportMetric(float64(series), "series")
	}
}

// BenchmarkConsumeScrape is the cost of one node's scrape in the view (the exporter's share of
// the pipeline's work).
func BenchmarkConsumeScrape(b *testing.B) {
	st := newTestStore(b, nil)
	start := st.clock
	i := 0
	for b.Loop() {
		b.StopTimer()
		at := start.Add(time.Duration(i) * time.Second)
		md := demoNode("node1", start, at, i)
		st.clock = at
		b.StartTimer()
		st.consumeMetrics(md)
		i++
	}
}

// BenchmarkNodeView is the cost of the page's poll: the whole window of one node (its first
// load) as the API encodes it.
func BenchmarkNodeView(b *testing.B) {
	st := newTestStore(b, nil)
	start := st.clock
	for i := range 1800 {
		at := start.Add(time.Duration(i) * time.Second)
		st.feed(at, demoNode("node1", start, at, i))
	}
	for b.Loop() {
		if _, ok := st.nodeView("node1", 0, time.Second, nodestate.OwnerID{}); !ok {
			b.Fatal("no node")
		}
	}
}

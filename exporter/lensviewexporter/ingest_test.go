package lensviewexporter

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
)

// congested is the paper's congestion case: a switch port limited to 20 Gb/s, RNIC TX at
// (4096-58)/4096 x 20 Gb/s (internal/scenario.CongestedRate).
const congested = (4096.0 - 58.0) / 4096.0 * 20e9 / 8

func TestBandwidthSeriesNamedAsThePaper(t *testing.T) {
	st := newTestStore(t, nil)
	start := st.clock
	for i := range 4 {
		at := start.Add(time.Duration(i) * time.Second)
		f := float64(i)
		st.feed(at, batch("node1", start, at,
			ioPoint("rnic", "transmit", "mlx5_1/1", f*congested),
			ioPoint("rnic", "receive", "mlx5_1/1", f*1e9),
			ioPoint("netdev", "transmit", "ens1f1np1", f*1e6),
			// Two IIO stacks and two memory controllers: one series per direction, summed.
			ioPoint("cpu_pcie", "receive", "socket0/iio1", f*1e8),
			ioPoint("cpu_pcie", "receive", "socket1/iio2", f*2e8),
			ioPoint("cpu_pcie", "transmit", "socket0/iio1", f*3e8),
			ioPoint("cpu_memory", "read", "socket0/imc", f*1e9),
			ioPoint("cpu_memory", "read", "socket1/imc", f*0.5e9),
			ioPoint("cpu_memory", "write", "socket0/imc", f*0.6e9),
			ioPoint("gpu_pcie", "transmit", "gpu0", f*congested),
			ioPoint("gpu_pcie", "receive", "gpu0", f*1e9),
			gauge(metricDRAMActive, 0.55, "device", "gpu0"),
		))
	}
	v := st.view(t, "node1")
	assert.Equal(t, []string{
		"RNIC(mlx5_1)[TX]", "RNIC(mlx5_1)[RX]", "NET(ens1f1np1)[TX]", "CPU PCIe[TX]", "CPU PCIe[RX]",
		"CPU MEM[RD]", "CPU MEM[WR]", "GPU0 PCIe[TX]", "GPU0 PCIe[RX]", "GPU0 MEM BW[RD/WR]",
	}, labels(v))

	tx, _ := seriesByLabel(v, "RNIC(mlx5_1)[TX]")
	require.Len(t, tx.V, 3, "the first point of a counter has no rate")
	for _, r := range tx.V {
		assert.InDelta(t, congested, r, 1, "bytes/s between two cumulative points a second apart")
	}
	assert.Equal(t, "By/s", tx.Unit)
	assert.Equal(t, axisBytes, tx.Axis)

	rx, _ := seriesByLabel(v, "CPU PCIe[RX]")
	assert.InDelta(t, 3e8, rx.V[0], 1, "stacks of one scrape add up")
	rd, _ := seriesByLabel(v, "CPU MEM[RD]")
	assert.InDelta(t, 1.5e9, rd.V[len(rd.V)-1], 1)

	dram, _ := seriesByLabel(v, "GPU0 MEM BW[RD/WR]")
	assert.Equal(t, axisRatio, dram.Axis, "GPU memory activity on its own axis")
	assert.Len(t, dram.V, 4)

	assert.InDelta(t, 1.0, v.Observed.RDMAShareOfNetwork, 0.001)
}

func TestRateAcrossAResetAndAFastInterval(t *testing.T) {
	st := newTestStore(t, nil)
	start := st.clock
	feed := func(at, start time.Time, v float64) {
		st.feed(at, batch("n", start, at, ioPoint("rnic", "transmit", "mlx5_0/1", v)))
	}
	// Every 100 ms at 1 s resolution: one rate per 0.8 s or more, each over the whole span.
	for i := range 21 {
		at := start.Add(time.Duration(i) * 100 * time.Millisecond)
		feed(at, start, float64(i)*1e8) // 1e9 B/s
	}
	s, _ := seriesByLabel(st.view(t, "n"), "RNIC(mlx5_0)[TX]")
	require.Len(t, s.V, 2)
	for _, r := range s.V {
		assert.InDelta(t, 1e9, r, 1)
	}
	// The driver reloaded: the receiver starts a new series (new start time, lower value). No
	// rate is drawn across the restart; the next one is of the new series.
	restart := start.Add(3 * time.Second)
	feed(restart, restart, 5)
	feed(restart.Add(time.Second), restart, 5+2e9)
	s, _ = seriesByLabel(st.view(t, "n"), "RNIC(mlx5_0)[TX]")
	require.Len(t, s.V, 3)
	assert.InDelta(t, 2e9, s.V[2], 1)
}

func TestGaugesAndDeltasAreNotRates(t *testing.T) {
	st := newTestStore(t, nil)
	at := st.clock
	md := batch("n", at, at, ioPoint("rnic", "transmit", "mlx5_0/1", 1))
	md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Sum().SetAggregationTemporality(2 - 1) // delta
	st.feed(at, md)
	st.feed(at.Add(time.Second), md)
	assert.Empty(t, st.view(t, "n").Series, "only cumulative interconnect.io is a counter the view can take rates of")
}

func TestPortsAndCongestionCounters(t *testing.T) {
	st := newTestStore(t, nil)
	start := st.clock
	for i := range 3 {
		at := start.Add(time.Duration(i) * time.Second)
		f := float64(i)
		st.feed(at, batch("n", start, at,
			ioPoint("rnic", "transmit", "mlx5_0/1", f*congested),
			gauge(metricPortRate, 100e9/8, "device", "mlx5_0/1"),
			gauge(metricPortWidth, 4, "device", "mlx5_0/1"),
			gauge(metricPortState, 4, "device", "mlx5_0/1"),
			counter(metricCNP, f*1.8e4, "device", "mlx5_0/1", "counter", "np_cnp_sent"),
			counter(metricCNP, f*1.7e4, "device", "mlx5_0/1", "counter", "rp_cnp_handled"),
			counter(metricECN, f*2.2e4, "device", "mlx5_0/1"),
			counter(metricXmitWait, f*4.1e7, "device", "mlx5_0/1"),
			gauge(metricPortInfo, 1, "device", "mlx5_0/1", "netdev", "ens1f0np0", "link_layer", "Ethernet"),
			// PFC counters are the netdev's ethtool statistics (receiver/rnicreceiver/scraper.go).
			counter(metricPFCPause, f*100, "device", "ens1f0np0", "direction", "receive", "priority", "3"),
			counter(metricPFCPause, f*50, "device", "ens1f0np0", "direction", "receive", "priority", "4"),
		))
	}
	v := st.view(t, "n")
	require.Len(t, v.Ports, 1, "the netdev's PFC counters belong to the RNIC port's row")
	p := v.Ports[0]
	assert.Equal(t, "mlx5_0/1", p.Device)
	assert.Equal(t, 100e9/8, p.RateBytes)
	assert.Equal(t, int64(4), p.Width)
	assert.Equal(t, int64(4), p.State)
	assert.InDelta(t, congested, p.TransmitRate, 1)
	assert.InDelta(t, congested/(100e9/8), p.LineShare, 1e-9)
	assert.InDelta(t, 1.8e4, p.Counters["np_cnp_sent"], 0.1)
	assert.InDelta(t, 1.7e4, p.Counters["rp_cnp_handled"], 0.1)
	assert.InDelta(t, 2.2e4, p.Counters["ecn_marked"], 0.1)
	assert.InDelta(t, 4.1e7, p.Counters["xmit_wait"], 1)
	assert.InDelta(t, 150, p.Counters["pfc_pause_receive"], 0.01, "priorities summed")
	assert.InDelta(t, congested/(100e9/8), v.Observed.RDMATransmitLineShare, 1e-9)

	var events []string
	for _, s := range v.Series {
		if s.Axis == axisEvents {
			events = append(events, s.Label)
		}
	}
	assert.ElementsMatch(t, []string{"RNIC(mlx5_0) np cnp sent", "RNIC(mlx5_0) rp cnp handled", "RNIC(mlx5_0) ECN marked",
		"RNIC(mlx5_0) xmit_wait", "NET(ens1f0np0) PFC pause[RX]"}, events)
}

// TestTopologyTable feeds the rnic receiver's rnic.topology.* metrics of a node where
// nvidia-peermem is missing and the NIC sits under the other socket (the gdr_bounce case of
// internal/scenario; attributes as receiver/rnicreceiver/topology.go records them: the GPU by its
// PCI address), and the gpu receiver's gpu.info and link width for the same GPU.
func TestTopologyTable(t *testing.T) {
	st := newTestStore(t, nil)
	at := st.clock
	const gpu = "0000:1a:00.0"
	st.feed(at, batch("n", at, at,
		gauge(metricTopoDist, 5, "gpu.pci.bus_id", gpu, "device", "mlx5_0", "pcie.path", "SYS"),
		gauge(metricTopoNearest, 5, "gpu.pci.bus_id", gpu, "device", "mlx5_0", "pcie.path", "SYS"),
		gauge(metricTopoReady, 0, "gpu.pci.bus_id", gpu, "device", "mlx5_0", "gpudirect.reason", "pcie_path"),
		gauge(metricTopoACS, -1, "gpu.pci.bus_id", gpu, "device", "mlx5_0"),
		gauge(metricTopoIOMMU, 1, "device", gpu, "pci.bus_id", gpu, "iommu.mode", "passthrough"),
		gauge(metricTopoIOMMU, 1, "device", "mlx5_0", "iommu.mode", "translated"),
		gauge(metricTopoDegrade, 1, "device", "mlx5_0"),
		gauge(metricTopoPeerMem, 0, "mechanism", "nvidia_peermem"),
		gauge(metricTopoPeerMem, -1, "mechanism", "dma_buf"),
		gauge(metricGPUInfo, 1, "device", "gpu0", "pci.bus_id", gpu),
		gauge(metricGPUWidth, 16, "device", "gpu0"),
		gauge(metricGPUMaxWidth, 16, "device", "gpu0"),
	))
	tp := st.view(t, "n").Topology
	assert.Equal(t, map[string]int64{"nvidia_peermem": 0, "dma_buf": -1}, tp.PeerMemory)
	require.Len(t, tp.Pairs, 1)
	assert.Equal(t, topologyPair{GPU: gpu, GPUDevice: "gpu0", NIC: "mlx5_0", Path: "SYS", Distance: 5, Nearest: true, Ready: 0,
		ReadyReason: "pcie_path", ACSRedirect: -1,
		GPUIOMMU: "passthrough", NICIOMMU: "translated", GPULinkDegraded: 0, NICLinkDegraded: 1}, tp.Pairs[0])
}

// TestTopologyTableJoinsGPUsByBusID: on a node whose AMD GPU comes first in PCI order, the gpu
// receiver's gpu0 (DCGM GPU 0) is the second GPU in PCI order; its pair's row carries gpu0's
// name and gpu0's own link (x8 of x16), not those of the GPU an ordinal in PCI order called
// gpu0, and the GPU that no gpu receiver names keeps its address and an unknown link.
func TestTopologyTableJoinsGPUsByBusID(t *testing.T) {
	st := newTestStore(t, nil)
	at := st.clock
	st.feed(at, batch("n", at, at,
		gauge(metricTopoReady, 1, "gpu.pci.bus_id", "0000:06:00.0", "device", "mlx5_0", "gpudirect.reason", "ready"),
		gauge(metricTopoReady, 0, "gpu.pci.bus_id", "0000:13:00.0", "device", "mlx5_0", "gpudirect.reason", "acs_redirect"),
		gauge(metricTopoReady, 1, "gpu.pci.bus_id", "0000:33:00.0", "device", "mlx5_1", "gpudirect.reason", "ready"),
		gauge(metricGPUInfo, 1, "device", "gpu0", "pci.bus_id", "0000:13:00.0"),
		gauge(metricGPUInfo, 1, "device", "gpu1", "pci.bus_id", "0000:33:00.0"),
		gauge(metricGPUWidth, 8, "device", "gpu0"), gauge(metricGPUMaxWidth, 16, "device", "gpu0"),
		gauge(metricGPUWidth, 16, "device", "gpu1"), gauge(metricGPUMaxWidth, 16, "device", "gpu1"),
	))
	rows := map[string]topologyPair{}
	for _, p := range st.view(t, "n").Topology.Pairs {
		rows[p.GPU] = p
	}
	require.Len(t, rows, 3)
	assert.Equal(t, "gpu0", rows["0000:13:00.0"].GPUDevice)
	assert.Equal(t, int64(0), rows["0000:13:00.0"].Ready)
	assert.Equal(t, int64(1), rows["0000:13:00.0"].GPULinkDegraded, "gpu0's own x8 link")
	assert.Equal(t, "gpu1", rows["0000:33:00.0"].GPUDevice)
	assert.Equal(t, int64(0), rows["0000:33:00.0"].GPULinkDegraded)
	assert.Equal(t, "", rows["0000:06:00.0"].GPUDevice)
	assert.Equal(t, int64(-1), rows["0000:06:00.0"].GPULinkDegraded)
}

// TestTopologyTableOrder: pairs are listed as the rnic receiver orders devices (mlx5_2 before
// mlx5_10, internal/natorder), and an unknown verdict keeps its reason.
func TestTopologyTableOrder(t *testing.T) {
	st := newTestStore(t, nil)
	at := st.clock
	var pts []pt
	for _, nic := range []string{"mlx5_10", "mlx5_2", "mlx5_0"} {
		pts = append(pts, gauge(metricTopoReady, -1, "gpu.pci.bus_id", "0000:1a:00.0", "device", nic, "gpudirect.reason", "acs_unknown"))
	}
	st.feed(at, batch("n", at, at, pts...))
	tp := st.view(t, "n").Topology
	var nics []string
	for _, p := range tp.Pairs {
		nics = append(nics, p.NIC)
		assert.Equal(t, int64(-1), p.Ready)
		assert.Equal(t, "acs_unknown", p.ReadyReason)
	}
	assert.Equal(t, []string{"mlx5_0", "mlx5_2", "mlx5_10"}, nics)
}

func TestNoDiagnosisWithoutTheConnector(t *testing.T) {
	st := newTestStore(t, nil)
	at := st.clock
	st.feed(at, batch("n", at, at, ioPoint("rnic", "transmit", "mlx5_0/1", 1)))
	d := st.view(t, "n").Diagnosis
	assert.False(t, d.Present)
	assert.Empty(t, d.History)
}

func TestForgetsOldNodesAndSeries(t *testing.T) {
	st := newTestStore(t, func(c *Config) {
		c.Window = time.Minute
		c.NodeTimeout = 2 * time.Minute
	})
	start := st.clock
	for i := range 3 {
		at := start.Add(time.Duration(i) * time.Second)
		st.feed(at, batch("gone", start, at, ioPoint("rnic", "transmit", "mlx5_0/1", float64(i))))
		st.feed(at, batch("stays", start, at, ioPoint("rnic", "transmit", "mlx5_0/1", float64(i)), ioPoint("gpu_pcie", "transmit", "gpu0", float64(i))))
	}
	// "stays" keeps reporting its GPU only; its NIC series ages out of the window, and "gone"
	// is forgotten after node_timeout.
	for i := 3; i < 200; i++ {
		at := start.Add(time.Duration(i) * time.Second)
		st.feed(at, batch("stays", start, at, ioPoint("gpu_pcie", "transmit", "gpu0", float64(i))))
	}
	var names []string
	for _, n := range st.nodeList() {
		names = append(names, n.Name)
	}
	assert.Equal(t, []string{"stays"}, names)
	v := st.view(t, "stays")
	assert.Equal(t, []string{"GPU0 PCIe[TX]"}, labels(v))
	s := v.Series[0]
	assert.LessOrEqual(t, len(s.T), 61, "only the window is served")
	assert.GreaterOrEqual(t, s.T[0], st.clock.Add(-time.Minute).UnixMilli())
	assert.LessOrEqual(t, st.nodes["stays"].series["gpu_pcie/transmit/gpu0"].ring.len(), st.ringPoints)
}

// TestTopologyFactsAgeOut: a node whose topology facts stop coming (a GPU or NIC gone, the rnic
// receiver's topology turned off) loses them after the window, while its other series go on;
// facts still reported stay.
func TestTopologyFactsAgeOut(t *testing.T) {
	st := newTestStore(t, func(c *Config) { c.Window = time.Minute })
	start := st.clock
	const gone, stays = "0000:1a:00.0", "0000:33:00.0"
	st.feed(start, batch("n", start, start,
		gauge(metricTopoReady, 0, "gpu.pci.bus_id", gone, "device", "mlx5_0", "gpudirect.reason", "pcie_path"),
		gauge(metricTopoIOMMU, 1, "device", gone, "pci.bus_id", gone, "iommu.mode", "passthrough"),
		gauge(metricTopoPeerMem, 0, "mechanism", "nvidia_peermem"),
		gauge(metricGPUInfo, 1, "device", "gpu0", "pci.bus_id", gone),
		gauge(metricGPUWidth, 8, "device", "gpu0"), gauge(metricGPUMaxWidth, 16, "device", "gpu0"),
	))
	require.Len(t, st.view(t, "n").Topology.Pairs, 1)
	for i := 1; i < 120; i++ {
		at := start.Add(time.Duration(i) * time.Second)
		st.feed(at, batch("n", start, at,
			ioPoint("rnic", "transmit", "mlx5_0/1", float64(i)),
			gauge(metricTopoReady, 1, "gpu.pci.bus_id", stays, "device", "mlx5_1", "gpudirect.reason", "ready")))
	}
	tp := st.view(t, "n").Topology
	require.Len(t, tp.Pairs, 1)
	assert.Equal(t, stays, tp.Pairs[0].GPU)
	assert.Empty(t, tp.PeerMemory, "peer memory last seen two windows ago")
	assert.Equal(t, 2, st.nodes["n"].state.Series(), "the node's state keeps the rnic counter and the pair still reported, nothing of the GPU gone")
}

func TestBoundsOnNodesAndSeries(t *testing.T) {
	st := newTestStore(t, func(c *Config) {
		c.MaxNodes = 2
		c.MaxSeriesPerNode = 3
	})
	start := st.clock
	for j, n := range []string{"a", "b", "c"} {
		for i := range 2 {
			at := start.Add(time.Duration(2*j+i) * time.Second)
			var pts []pt
			for _, dev := range []string{"mlx5_0/1", "mlx5_1/1", "mlx5_2/1", "mlx5_3/1"} {
				pts = append(pts, ioPoint("rnic", "transmit", dev, float64(i)))
			}
			st.feed(at, batch(n, start, at, pts...))
		}
	}
	var names []string
	for _, n := range st.nodeList() {
		names = append(names, n.Name)
	}
	assert.Equal(t, []string{"b", "c"}, names, "the two most recently seen nodes")
	assert.Len(t, st.view(t, "c").Series, 3)

	// The node's tables are bounded the same way, its state at 4 x max_series_per_node series.
	at := start.Add(7 * time.Second)
	var pts []pt
	for i := range 10 {
		dev := fmt.Sprintf("mlx5_%d/1", i)
		pts = append(pts, gauge(metricPortRate, 1, "device", dev),
			gauge(metricTopoReady, 1, "gpu.pci.bus_id", "0000:1a:00.0", "device", dev),
			gauge(metricVerdict, 1, "verdict", "idle", "device", dev))
	}
	st.feed(at, batch("c", start, at, pts...))
	v := st.view(t, "c")
	assert.Len(t, v.Ports, 3)
	assert.LessOrEqual(t, st.nodes["c"].state.Series(), 12)
	assert.Len(t, v.Diagnosis.Devices, 3)
}

func TestUnnamedResourceIsThisHost(t *testing.T) {
	st := newTestStore(t, nil)
	at := st.clock
	st.feed(at, batch("", at, at, ioPoint("rnic", "transmit", "mlx5_0/1", 1)))
	_, ok := st.nodeView("this-host", 0, time.Second, nodestate.OwnerID{})
	assert.True(t, ok, "a node without host.name (the default config) is shown under the collector's host name")
}

// TestSaturatedCounterShowsNoStaleRate: port_xmit_wait is a 32-bit PortCounters field that stops
// at all ones (IBA 1.8 §16.1.3.5); the rnic receiver then stops its series and reports
// rnic.counter.saturated. The port's row says so instead of the last rate.
func TestSaturatedCounterShowsNoStaleRate(t *testing.T) {
	st := newTestStore(t, nil)
	start := st.clock
	for i := range 3 {
		at := start.Add(time.Duration(i) * time.Second)
		st.feed(at, batch("n", start, at, gauge(metricPortRate, 12.5e9, "device", "mlx5_0/1"),
			counter(metricXmitWait, float64(i)*4.1e8, "device", "mlx5_0/1")))
	}
	p := st.view(t, "n").Ports[0]
	assert.InDelta(t, 4.1e8, p.Counters["xmit_wait"], 1)
	assert.Empty(t, p.Saturated)
	for i := 3; i < 60; i++ {
		at := start.Add(time.Duration(i) * time.Second)
		st.feed(at, batch("n", start, at, gauge(metricPortRate, 12.5e9, "device", "mlx5_0/1"),
			gauge(metricSaturated, 1, "device", "mlx5_0/1", "counter", "port_xmit_wait")))
	}
	p = st.view(t, "n").Ports[0]
	assert.NotContains(t, p.Counters, "xmit_wait", "no rate a minute after the counter stopped")
	assert.Equal(t, []string{"port_xmit_wait"}, p.Saturated)
}

func TestDeviceVerdictEnds(t *testing.T) {
	st := newTestStore(t, nil)
	start := st.clock
	at := func(i int) time.Time { return start.Add(time.Duration(i) * time.Second) }
	st.feed(at(0), batch("n", start, at(0),
		gauge(metricVerdict, 1, "verdict", "healthy_gpudirect", "device", ""),
		gauge(metricVerdict, 1, "verdict", "link_degraded", "device", "mlx5_0/1")))
	require.Len(t, st.view(t, "n").Diagnosis.Devices, 1)
	// The port trained back up: the connector reports the device's verdict 0.
	st.feed(at(1), batch("n", start, at(1),
		gauge(metricVerdict, 1, "verdict", "healthy_gpudirect", "device", ""),
		gauge(metricVerdict, 0, "verdict", "link_degraded", "device", "mlx5_0/1")))
	d := st.view(t, "n").Diagnosis
	assert.Empty(t, d.Devices)
	assert.Equal(t, "healthy_gpudirect", d.Verdict)
}

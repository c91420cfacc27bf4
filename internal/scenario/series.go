package scenario

import (
	"sort"
	"strconv"
)

// Point is one value the receivers report for a simulated node: a metric of their metadata.yaml,
// its attributes and its value (cumulative for a counter).
type Point struct {
	Metric  string
	Attrs   map[string]string
	Value   float64
	Counter bool
}

// Key identifies the point's series.
func (p Point) Key() string {
	keys := make([]string, 0, len(p.Attrs))
	for k := range p.Attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := p.Metric
	for _, k := range keys {
		s += "," + k + "=" + p.Attrs[k]
	}
	return s
}

// PCI addresses and IIO stacks of the simulated node, as the receivers name them.
const (
	gpuBusID     = "0000:1a:00.0"
	nicNearBusID = "0000:1b:00.0"
	nicFarBusID  = "0000:86:00.0"
	nic2BusID    = "0000:3f:00.0"
	nvmeBusID    = "0000:3e:00.0"
	gpuStackDev  = "socket0/iio1"
	farStackDev  = "socket1/iio1"
	otherDev     = "socket0/iio2"
)

// Stream renders node n of c as the rnic, cpuuncore and gpu receivers report it: one []Point per
// sample, interval seconds apart, with the same ripple the recordings have. It is the simulator's
// model without the receivers in between, for tests that feed a diagnosis directly (the
// connector's unit tests, the Prometheus rules' promtool tests); TestStreamMatchesReceivers
// checks it against the recordings replayed through the receivers.
func (c Case) Stream(n, samples int, interval float64) [][]Point {
	return c.stream(n, samples, interval, true)
}

// SteadyStream is Stream without the ripple: every rate constant within a phase, so that a
// counter is a straight line per phase (the input of a promtool test).
func (c Case) SteadyStream(n, samples int, interval float64) [][]Point {
	return c.stream(n, samples, interval, false)
}

func (c Case) stream(n, samples int, interval float64, ripples bool) [][]Point {
	first := c.Phases[0].Nodes[n]
	nicBus, nicStack := nicNearBusID, gpuStackDev
	if !first.NICOnGPUSwitch {
		nicBus, nicStack = nicFarBusID, farStackDev
	}
	cum := map[string]float64{}
	nccl := c.NCCLRun(n, interval)
	var out [][]Point
	for i := range samples {
		tr := c.At(i, n)
		w := wobble(i, n)
		if !ripples {
			w = 1
		}
		ripple := w
		if tr.XmitWaitPerSec > 0 && tr.CNPSentPerSec > 0 {
			ripple = 1 // a congested port runs at the limit (rnicCounters.step)
		}
		var pts []Point
		counter := func(metric string, rate float64, attrs map[string]string) {
			p := Point{Metric: metric, Attrs: attrs, Counter: true}
			k := p.Key()
			cum[k] += rate * interval
			p.Value = cum[k]
			pts = append(pts, p)
		}
		gauge := func(metric string, v float64, attrs map[string]string) {
			pts = append(pts, Point{Metric: metric, Attrs: attrs, Value: v})
		}
		io := func(component, direction, device, bus string, rate float64) {
			counter("interconnect.io", rate, map[string]string{"component": component, "direction": direction, "device": device, "pci.bus_id": bus})
		}
		// rnic receiver.
		io("rnic", "transmit", Port, nicBus, tr.RNICTx*ripple)
		io("rnic", "receive", Port, nicBus, tr.RNICRx*ripple)
		io("netdev", "transmit", Netdev, nicBus, tr.NetdevTx*ripple)
		io("netdev", "receive", Netdev, nicBus, tr.NetdevRx*ripple)
		port := map[string]string{"device": Port}
		counter("rnic.packets", tr.RNICTx*ripple/mtu, map[string]string{"device": Port, "direction": "transmit"})
		counter("rnic.packets", tr.RNICRx*ripple/mtu, map[string]string{"device": Port, "direction": "receive"})
		counter("rnic.roce.cnp", tr.CNPSentPerSec, map[string]string{"device": Port, "counter": "np_cnp_sent"})
		counter("rnic.roce.cnp", tr.CNPHandledPerSec, map[string]string{"device": Port, "counter": "rp_cnp_handled"})
		counter("rnic.roce.ecn_marked", tr.ECNMarkedPerSec, port)
		counter("rnic.port.xmit_wait", tr.XmitWaitPerSec, port)
		prio := func(dir string) map[string]string {
			return map[string]string{"device": Netdev, "direction": dir, "priority": "3"}
		}
		counter("rnic.pfc.pause_frames", tr.PFCRxPausePerSec, prio("receive"))
		counter("rnic.pfc.pause_frames", tr.PFCTxPausePerSec, prio("transmit"))
		counter("rnic.pfc.pause_duration", tr.PFCRxPauseUsPerSec, prio("receive"))
		counter("rnic.pfc.pause_duration", 0, prio("transmit"))
		gauge("rnic.port.rate", tr.RateGbps*1e9/8, port)
		// The fast sampler (bursts.period) of a bursty case: both directions alike, a ring
		// AllReduce sends and receives its bucket at once (simulate's burstSubSamples).
		if b, ok := BurstsOf(c); ok {
			for _, dir := range []string{"transmit", "receive"} {
				gauge("rnic.burst.peak_rate", b.Rate, map[string]string{"component": "rnic", "direction": dir, "device": Port, "burst.window": b.Sample.String()})
				for _, share := range BurstShares {
					counter("rnic.burst.time_above", b.TimeAbove(share, tr.RateGbps*1e9/8),
						map[string]string{"component": "rnic", "direction": dir, "device": Port, "burst.share": strconv.FormatFloat(share, 'f', -1, 64)})
				}
			}
		}
		gauge("rnic.port.info", 1, map[string]string{"device": Port, "netdev": Netdev, "hca_type": HCAType})
		ready := 0.0
		if first.NICOnGPUSwitch && first.PeerMem {
			ready = 1
		}
		gauge("rnic.topology.gpudirect_ready", ready, map[string]string{"gpu.pci.bus_id": gpuBusID, "device": NIC})
		degraded := 0.0
		if first.NICLinkWidth > 0 && first.NICLinkWidth < 16 {
			degraded = 1
		}
		gauge("rnic.topology.link.degraded", degraded, map[string]string{"device": NIC, "pci.bus_id": nicBus})
		// The GPU's nearest NIC as the rnic receiver finds it in the simulated tree
		// (tools/simulate pciNode): mlx5_0 on the GPU's switch (PIX); a misplaced one under
		// socket 1 (SYS), unless the second NIC on another root port of socket 0 is nearer (NODE).
		nearest := map[string]string{"gpu.pci.bus_id": gpuBusID, "device": NIC, "pci.bus_id": nicBus, "pcie.path": "PIX"}
		distance := 1.0
		switch {
		case first.NICOnGPUSwitch:
		case first.SecondNIC:
			nearest["device"], nearest["pci.bus_id"], nearest["pcie.path"], distance = NIC2, nic2BusID, "NODE", 4
		default:
			nearest["pcie.path"], distance = "SYS", 5
		}
		gauge("rnic.topology.nearest_rnic", distance, nearest)
		// The second NIC reports while it is there (port_vanishes removes it).
		if first.SecondNIC && tr.SecondNIC {
			port2 := NIC2 + "/1"
			io("rnic", "transmit", port2, nic2BusID, 0)
			io("rnic", "receive", port2, nic2BusID, 0)
			io("netdev", "transmit", Netdev2, nic2BusID, tr.SecondNetdevTx*ripple)
			io("netdev", "receive", Netdev2, nic2BusID, tr.SecondNetdevRx*ripple)
			rate2, _ := tr.SecondRate()
			gauge("rnic.port.rate", rate2*1e9/8, map[string]string{"device": port2})
			gauge("rnic.port.info", 1, map[string]string{"device": port2, "netdev": Netdev2, "hca_type": HCAType})
			gauge("rnic.topology.gpudirect_ready", 0, map[string]string{"gpu.pci.bus_id": gpuBusID, "device": NIC2})
		}

		// cpuuncore receiver: socket 1 sees a fifth of socket 0's memory background.
		io("cpu_memory", "read", "socket0/imc", "", tr.MemRead*w)
		io("cpu_memory", "write", "socket0/imc", "", tr.MemWrite*w)
		io("cpu_memory", "read", "socket1/imc", "", tr.MemRead*w*Socket1Share)
		io("cpu_memory", "write", "socket1/imc", "", tr.MemWrite*w*Socket1Share)
		stack := map[string][2]float64{gpuStackDev: {tr.CPUPCIeRx, tr.CPUPCIeTx}, farStackDev: {}, otherDev: {tr.OtherRootRx, tr.OtherRootTx}}
		s := stack[nicStack]
		s[0] += tr.NICRootRx
		s[1] += tr.NICRootTx
		stack[nicStack] = s
		for _, dev := range []string{gpuStackDev, farStackDev, otherDev} {
			io("cpu_pcie", "receive", dev, "", stack[dev][0]*w)
			io("cpu_pcie", "transmit", dev, "", stack[dev][1]*w)
		}
		behind := map[string]string{gpuBusID: gpuStackDev, nicBus: nicStack}
		if first.SecondNIC {
			behind[nic2BusID] = otherDev
		}
		if first.Storage {
			behind[nvmeBusID] = otherDev
		}
		buses := make([]string, 0, len(behind))
		for bus := range behind {
			buses = append(buses, bus)
		}
		sort.Strings(buses)
		for _, bus := range buses {
			gauge("cpuuncore.pcie.device", 1, map[string]string{"device": behind[bus], "pci.bus_id": bus})
		}

		// gpu receiver.
		io("gpu_pcie", "transmit", GPU, gpuBusID, tr.GPUPCIeTx*w)
		io("gpu_pcie", "receive", GPU, gpuBusID, tr.GPUPCIeRx*w)
		gauge("gpu.info", 1, map[string]string{"device": GPU, "pci.bus_id": gpuBusID})
		// An A100 80GB PCIe: a Gen4 x16 link (tools/simulate gpuSample).
		gpuLink := map[string]string{"device": GPU, "pci.bus_id": gpuBusID}
		gauge("gpu.pcie.link.width", float64(first.LinkWidthOfGPU()), gpuLink)
		gauge("gpu.pcie.link.max_width", 16, gpuLink)
		gauge("gpu.pcie.link.max_generation", 4, gpuLink)
		out = append(out, c.ncclPoints(pts, nccl.Next(i), n))
	}
	return out
}

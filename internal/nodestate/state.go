package nodestate // import "github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/internal/natorder"
	"github.com/otelcol-iclens/otelcol-iclens/internal/pci"
)

// State is a node at one instant: every rate is the irate over the window of the counters it is
// made of, every gauge its newest value within the lookback.
type State struct {
	// io: component -> direction -> bytes/s; a component absent has no series with a rate.
	io map[string]map[string]float64
	// Netdevs is each netdev's IP bytes/s, both directions.
	Netdevs map[string]float64
	// Ports are the RDMA ports that report a line rate and whose traffic counters have a sample
	// within the window, by device (mlx5_0/1).
	Ports []Port
	// GPUs are the GPUs any receiver names, by Name.
	GPUs []GPU
	// Pairs are the rnic receiver's GPU-NIC pairs (rnic.topology.*).
	Pairs []Pair
	// NICLinkDegraded: NIC -> its PCIe link trained below its capability.
	NICLinkDegraded map[string]bool
	// IOMMU: PCI device (GPU address or RDMA device) -> IOMMU mode; PeerMemory: mechanism -> 1
	// when the kernel has it.
	IOMMU      map[string]string
	PeerMemory map[string]float64
	// PathWrite: device -> host PCIe writes on the root ports (IIO stacks) the GPUs and RDMA
	// NICs sit behind, or on every root port when PathMapped is false (the cpuuncore receiver
	// does not map them); NaN without cpu_pcie rates.
	PathWrite  float64
	PathMapped bool
	// Collectives are the NCCL communicators the nccl receiver reports, by id (collectives.go).
	Collectives []Collective
	// Owners and ByOwner: who owns each component instance, and each pod's or job's share of
	// the node (owners.go).
	Owners  map[DeviceID]Owner
	ByOwner map[OwnerID]*State
}

// Port is an RDMA port; rates in bytes (packets, frames) per second.
type Port struct {
	Device, Netdev, HCAType string
	// Rate is the trained link rate (one direction), Width its lanes (0 unknown).
	Rate  float64
	Width float64
	// PeerRate is the highest rate another port of the same model (hca_type) on the node
	// trained to: what this one can reach (0 without a peer).
	PeerRate       float64
	Tx, Rx         float64
	Packets, Marks float64 // marks: ECN-marked packets and CNPs
	// PauseFrames are the PFC and global pause frames/s of the port's netdev, both directions;
	// PauseTime the share of time paused, the busier direction's pause µs/s over 1e6.
	PauseFrames, PauseTime float64
	// TxPeak and RxPeak are the highest rates the rnic receiver's fast sampler saw over one of its
	// windows (PeakWindow, "10ms") in the newest collection interval (rnic.burst.peak_rate, with
	// bursts.period set; 0 without). TxAbove and RxAbove are the share of time the port ran at or
	// above a share of its line rate, by burst.share ("0.9"): rnic.burst.time_above's seconds per
	// second. A port at 7 % on average that is at line rate 7 % of the time moves in bursts.
	TxPeak, RxPeak   float64
	PeakWindow       string
	TxAbove, RxAbove map[string]float64
}

// TimeAbove is the share of time the port transmitted (or received) at or above share of its
// line rate, and whether the fast sampler reported it.
func (p Port) TimeAbove(direction, share string) (float64, bool) {
	m := p.TxAbove
	if direction == Receive {
		m = p.RxAbove
	}
	v, ok := m[share]
	return v, ok
}

// GPU is one GPU: Name is the gpu receiver's device (gpu0, a DCGM id or NVML index) joined on
// its PCI address, or the address itself on a node without the gpu receiver.
type GPU struct {
	Name, Bus string
	// Width and MaxWidth are the PCIe lanes trained and supported, MaxGen the highest PCIe
	// generation the GPU and its slot support (0 unknown).
	Width, MaxWidth, MaxGen float64
	// Ready is the best rnic.topology.gpudirect_ready over the GPU's NICs, -1 unreported.
	Ready float64
	// NVLinks are the GPU's NVLink links, where the per-link metrics are enabled (nvlink.go).
	NVLinks []NVLink
}

// LinkDegraded reports whether the GPU's link trained to fewer lanes than it can use; known is
// false while either width is unreported. A generation below the maximum is not a fault: the
// driver lowers it on an idle GPU (NVML nvmlDeviceGetCurrPcieLinkGeneration, "may change
// dynamically"), so only the width counts.
func (g GPU) LinkDegraded() (degraded, known bool) {
	if g.Width <= 0 || g.MaxWidth <= 0 {
		return false, false
	}
	return g.Width < g.MaxWidth, true
}

// LinkCapacity is what the GPU's PCIe link can carry in one direction (bytes/s) at its highest
// generation and width (pci.LaneBandwidth), whatever it trained to: NaN while either is
// unreported or the generation is one the kernel does not know.
func (g GPU) LinkCapacity() float64 {
	lane := pci.LaneBandwidth(pci.GenerationGTs(int(g.MaxGen)))
	if lane <= 0 || g.MaxWidth <= 0 {
		return math.NaN()
	}
	return lane * g.MaxWidth
}

// Pair is one GPU-NIC pair of the rnic receiver's topology; -1 is unreported.
type Pair struct {
	GPU, GPUName, NIC string // the GPU's PCI address, its name (GPU.Name), the NIC's RDMA device
	Path              string // PIX, PXB, PHB, NODE, SYS
	Distance, Ready   float64
	Reason            string
	ACS               float64
	Nearest           bool
}

// IO is a component's bytes/s in both directions; NaN when no series of it has a rate (as a
// PromQL sum over no series is absent).
func (s *State) IO(component string) float64 {
	d, ok := s.io[component]
	if !ok {
		return math.NaN()
	}
	var sum float64
	for _, r := range d {
		sum += r
	}
	return sum
}

// IODirection is a component's bytes/s in one direction: 0 where the component has rates but not
// in that direction, NaN where it has none.
func (s *State) IODirection(component, direction string) float64 {
	d, ok := s.io[component]
	if !ok {
		return math.NaN()
	}
	return d[direction]
}

// Has reports whether a component has at least one rate.
func (s *State) Has(component string) bool {
	_, ok := s.io[component]
	return ok
}

// GPU returns the GPU named name.
func (s *State) GPU(name string) (GPU, bool) {
	for _, g := range s.GPUs {
		if g.Name == name {
			return g, true
		}
	}
	return GPU{}, false
}

// GPUAt returns the GPU at PCI address bus.
func (s *State) GPUAt(bus string) (GPU, bool) {
	for _, g := range s.GPUs {
		if g.Bus == bus && bus != "" {
			return g, true
		}
	}
	return GPU{}, false
}

// NearestNIC returns the RDMA device the rnic receiver's topology names as nearest to the GPU
// at bus (rnic.topology.nearest_rnic): the NIC NCCL gives that GPU's rank.
func (s *State) NearestNIC(bus string) (string, bool) {
	for _, p := range s.Pairs {
		if p.GPU == bus && p.Nearest {
			return p.NIC, true
		}
	}
	return "", false
}

// PortsOf returns the ports of RDMA device nic (its ports are named <nic>/<port>).
func (s *State) PortsOf(nic string) []Port {
	var out []Port
	for _, p := range s.Ports {
		if dev, _, ok := strings.Cut(p.Device, "/"); ok && dev == nic {
			out = append(out, p)
		}
	}
	return out
}

// Port returns the port of device.
func (s *State) Port(device string) (Port, bool) {
	for _, p := range s.Ports {
		if p.Device == device {
			return p, true
		}
	}
	return Port{}, false
}

// At reads the node's series at now (ns): counters as their irate over window, gauges as their
// newest value within lookback.
func (n *Node) At(now int64, window, lookback time.Duration) *State {
	st := &State{io: map[string]map[string]float64{}, Netdevs: map[string]float64{}, NICLinkDegraded: map[string]bool{},
		IOMMU: map[string]string{}, PeerMemory: map[string]float64{}}
	ports := map[string]*Port{}
	port := func(dev string) *Port {
		p := ports[dev]
		if p == nil {
			p = &Port{Device: dev}
			ports[dev] = p
		}
		return p
	}
	netdevFrames := map[string]float64{}
	links := nvlinks{}
	netdevPause := map[string]map[string]float64{} // netdev -> direction -> µs/s
	stackWrite := map[string]float64{}
	stacksOf := map[string][]string{} // pci.bus_id -> IIO stacks (root ports) it sits behind
	busIDs := map[string]bool{}       // the GPUs' and RDMA NICs' PCI addresses
	haveRate := map[string]bool{}
	live := map[string]bool{}     // ports whose traffic counters have a sample within the window
	nameOf := map[string]string{} // GPU PCI address -> the gpu receiver's device (gpu.info)
	gpus := map[string]*GPU{}     // by the gpu receiver's device, then by address
	ready := map[string]float64{} // GPU PCI address -> best gpudirect_ready
	pairs := map[[2]string]*Pair{}
	pair := func(a map[string]string) *Pair {
		k := [2]string{a[AttrGPUBusID], a[AttrDevice]}
		p := pairs[k]
		if p == nil {
			p = &Pair{GPU: k[0], NIC: k[1], Distance: -1, Ready: -1, ACS: -1}
			pairs[k] = p
		}
		return p
	}
	gpu := func(dev string) *GPU {
		g := gpus[dev]
		if g == nil {
			g = &GPU{Name: dev, Ready: -1}
			gpus[dev] = g
		}
		return g
	}

	for _, s := range n.series {
		a := s.attrs
		if counters[s.metric] {
			if s.metric == MetricIO && (a[AttrComponent] == GPUPCIe || a[AttrComponent] == RNIC) && a[AttrBusID] != "" {
				if _, ok := s.value(now, lookback); ok {
					busIDs[a[AttrBusID]] = true
				}
			}
			// A port is live while its traffic counters report: they come with every scrape,
			// where its rate and info follow the receiver's slow cadence.
			if s.metric == MetricIO && a[AttrComponent] == RNIC {
				if _, ok := s.value(now, window); ok {
					live[a[AttrDevice]] = true
				}
			}
			r, ok := s.rate(now, window)
			if !ok {
				continue
			}
			switch s.metric {
			case MetricIO:
				comp, dir := a[AttrComponent], a[AttrDirection]
				d := st.io[comp]
				if d == nil {
					d = map[string]float64{}
					st.io[comp] = d
				}
				d[dir] += r
				switch comp {
				case RNIC:
					if dir == Transmit {
						port(a[AttrDevice]).Tx += r
					} else {
						port(a[AttrDevice]).Rx += r
					}
				case Netdev:
					st.Netdevs[a[AttrDevice]] += r
				case CPUPCIe:
					if dir == Receive {
						stackWrite[a[AttrDevice]] += r
					}
				}
			case MetricNVLinkLinkIO:
				links.add(a[AttrDevice], a[AttrLink], r, 0)
			case MetricNVLinkLinkErrors:
				links.add(a[AttrDevice], a[AttrLink], 0, r)
			case MetricPackets:
				port(a[AttrDevice]).Packets += r
			case MetricCNP, MetricECN:
				port(a[AttrDevice]).Marks += r
			case MetricPFCFrames, MetricPauseFrames:
				netdevFrames[a[AttrDevice]] += r
			case MetricBurstTimeAbove:
				dir := a[AttrDirection]
				if a[AttrComponent] != RNIC || dir != Transmit && dir != Receive {
					break // a netdev's bursts: its IP traffic, which the port table does not hold
				}
				p := port(a[AttrDevice])
				m := &p.TxAbove
				if dir == Receive {
					m = &p.RxAbove
				}
				if *m == nil {
					*m = map[string]float64{}
				}
				(*m)[a[AttrBurstShare]] = r
			case MetricPFCDuration:
				d := netdevPause[a[AttrDevice]]
				if d == nil {
					d = map[string]float64{}
					netdevPause[a[AttrDevice]] = d
				}
				d[a[AttrDirection]] += r
			}
			continue
		}
		val, ok := s.value(now, lookback)
		if !ok {
			continue
		}
		switch s.metric {
		case MetricPortRate:
			p := port(a[AttrDevice])
			p.Rate = math.Max(p.Rate, val)
			haveRate[a[AttrDevice]] = true
		case MetricPortWidth:
			port(a[AttrDevice]).Width = val
		case MetricBurstPeak:
			if dir := a[AttrDirection]; a[AttrComponent] == RNIC && (dir == Transmit || dir == Receive) {
				p := port(a[AttrDevice])
				if dir == Receive {
					p.RxPeak = val
				} else {
					p.TxPeak = val
				}
				p.PeakWindow = a[AttrBurstWindow]
			}
		case MetricPortInfo:
			p := port(a[AttrDevice])
			p.Netdev, p.HCAType = a[AttrNetdev], a[AttrHCAType]
		case MetricTopoReady:
			if old, ok := ready[a[AttrGPUBusID]]; !ok || val > old {
				ready[a[AttrGPUBusID]] = val
			}
			p := pair(a)
			p.Ready, p.Reason = val, a[AttrReason]
		case MetricTopoDist:
			p := pair(a)
			p.Distance, p.Path = val, a[AttrPath]
		case MetricTopoNearest:
			// Reported for a GPU's nearest NIC only, its value the PCIe distance to it.
			p := pair(a)
			p.Nearest, p.Path = true, a[AttrPath]
		case MetricTopoACS:
			pair(a).ACS = val
		case MetricTopoIOMMU:
			st.IOMMU[a[AttrDevice]] = a[AttrIOMMUMode]
		case MetricTopoPeerMem:
			st.PeerMemory[a[AttrMechanism]] = val
		case MetricGPUInfo:
			if a[AttrBusID] != "" {
				nameOf[a[AttrBusID]] = a[AttrDevice]
				gpu(a[AttrDevice]).Bus = a[AttrBusID]
			}
		case MetricTopoDegrade:
			st.NICLinkDegraded[a[AttrDevice]] = st.NICLinkDegraded[a[AttrDevice]] || val == 1
		case MetricGPUWidth:
			gpu(a[AttrDevice]).Width = val
		case MetricGPUMaxWidth:
			gpu(a[AttrDevice]).MaxWidth = val
		case MetricGPUMaxGen:
			gpu(a[AttrDevice]).MaxGen = val
		case MetricPCIeDevice:
			stacksOf[a[AttrBusID]] = append(stacksOf[a[AttrBusID]], a[AttrDevice])
		}
	}

	// GPUs the rnic receiver names by address: under the gpu receiver's name for it, or the
	// address itself (GPU.Name).
	for bus, r := range ready {
		name := bus
		if dev, ok := nameOf[bus]; ok {
			name = dev
		}
		g := gpu(name)
		g.Bus, g.Ready = bus, r
	}
	for dev := range links {
		gpu(dev)
	}
	for _, g := range gpus {
		g.NVLinks = links.of(g.Name)
		st.GPUs = append(st.GPUs, *g)
	}
	sort.Slice(st.GPUs, func(i, j int) bool { return natorder.Compare(st.GPUs[i].Name, st.GPUs[j].Name) < 0 })
	for _, p := range pairs {
		p.GPUName = p.GPU
		if dev, ok := nameOf[p.GPU]; ok {
			p.GPUName = dev
		}
		st.Pairs = append(st.Pairs, *p)
	}
	sort.Slice(st.Pairs, func(i, j int) bool {
		if c := natorder.Compare(st.Pairs[i].GPU, st.Pairs[j].GPU); c != 0 {
			return c < 0
		}
		return natorder.Compare(st.Pairs[i].NIC, st.Pairs[j].NIC) < 0
	})

	// The root ports on the RDMA path: those the GPUs and NICs sit behind.
	path := map[string]bool{}
	for id := range busIDs {
		for _, s := range stacksOf[id] {
			path[s] = true
		}
	}
	st.PathMapped = len(path) > 0
	for s, w := range stackWrite {
		if !st.PathMapped || path[s] {
			st.PathWrite += w
		}
	}
	if !st.Has(CPUPCIe) {
		st.PathWrite = math.NaN()
	}

	for dev := range haveRate {
		if !live[dev] {
			// Its counters ended: the port is gone (driver unbound, card removed), and its
			// verdicts and evidence end with them, not with its slow facts' lookback.
			continue
		}
		p := ports[dev]
		if p.Netdev != "" {
			p.PauseFrames = netdevFrames[p.Netdev]
			for _, us := range netdevPause[p.Netdev] {
				p.PauseTime = math.Max(p.PauseTime, us/1e6)
			}
		}
		st.Ports = append(st.Ports, *p)
	}
	// A port's peers: the other ports of the same model, which the same node cabled to the same
	// fabric (rnic.port.info hca_type, from the kernel's ib_device hca_type attribute).
	for i := range st.Ports {
		p := &st.Ports[i]
		for _, q := range st.Ports {
			if q.Device != p.Device && q.HCAType != "" && q.HCAType == p.HCAType {
				p.PeerRate = math.Max(p.PeerRate, q.Rate)
			}
		}
	}
	sort.Slice(st.Ports, func(i, j int) bool { return natorder.Compare(st.Ports[i].Device, st.Ports[j].Device) < 0 })
	st.Collectives = n.collectives(now, window, lookback, func(bus string) string {
		if dev, ok := nameOf[bus]; ok {
			return dev
		}
		return bus
	})
	n.readOwners(st, now, window, lookback)
	return st
}

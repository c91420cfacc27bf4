package pci

// Path is the PCIe relationship between two devices, in the words of `nvidia-smi topo -m` and
// NCCL_NET_GDR_LEVEL, ordered from closest to farthest so that the value can be compared.
type Path int

const (
	// PathUnknown: the devices sit under different host bridges and at least one of them has no
	// NUMA node (numa_node -1, "unknown" in Documentation/ABI/testing/sysfs-bus-pci): NODE and
	// SYS cannot be told apart.
	PathUnknown Path = 0
	// PathPIX: through at most one PCIe switch (or functions of one device).
	PathPIX Path = 1
	// PathPXB: through several PCIe bridges, without crossing the host bridge.
	PathPXB Path = 2
	// PathPHB: through a PCIe host bridge (the root complex, typically the CPU).
	PathPHB Path = 3
	// PathNODE: across host bridges within one NUMA node.
	PathNODE Path = 4
	// PathSYS: across NUMA nodes (the SMP interconnect: UPI, Infinity Fabric).
	PathSYS Path = 5
)

func (p Path) String() string {
	switch p {
	case PathPIX:
		return "PIX"
	case PathPXB:
		return "PXB"
	case PathPHB:
		return "PHB"
	case PathNODE:
		return "NODE"
	case PathSYS:
		return "SYS"
	}
	return "unknown"
}

// Farther reports whether p is a longer path than q, an unknown path being the longest.
func (p Path) Farther(q Path) bool { return p.rank() > q.rank() }

func (p Path) rank() int {
	if p == PathUnknown {
		return int(PathSYS) + 1
	}
	return int(p)
}

// PathBetween classifies the path between two functions from their place in the tree.
func PathBetween(a, b *Device) Path {
	if a.RootBus != b.RootBus {
		if a.NUMANode < 0 || b.NUMANode < 0 {
			return PathUnknown
		}
		if a.NUMANode == b.NUMANode {
			return PathNODE
		}
		return PathSYS
	}
	common := commonDepth(a, b)
	switch {
	case common == 0:
		// Different root ports of one host bridge.
		return PathPHB
	case len(a.Chain)-common <= 2 && len(b.Chain)-common <= 2:
		// Below the last common bridge each side crosses at most one more port: one switch
		// (upstream port common, one downstream port each), or functions of one device.
		return PathPIX
	case common >= 2:
		// A switch in common but more bridges on the way: nested switches.
		return PathPXB
	}
	return PathPHB
}

// BridgesBelowCommon returns the bridges peer traffic between a and b crosses below their lowest
// common bridge, root ports excluded: the switch downstream ports whose ACS P2P redirect decides
// whether that traffic may turn inside the switch. (ACS on root ports is the normal state under an IOMMU and
// matters only for traffic that crosses the root complex anyway.)
func BridgesBelowCommon(a, b *Device) []string {
	if a.RootBus != b.RootBus {
		return nil
	}
	common := commonDepth(a, b)
	var out []string
	add := func(chain []string) {
		// chain[len-1] is the endpoint itself; chain[0] is the root port.
		for i := max(common, 1); i < len(chain)-1; i++ {
			out = append(out, chain[i])
		}
	}
	add(a.Chain)
	add(b.Chain)
	return out
}

// commonDepth is how many bridges (from the root port down) the chains of a and b share.
func commonDepth(a, b *Device) int {
	n := 0
	for n < len(a.Chain) && n < len(b.Chain) && a.Chain[n] == b.Chain[n] {
		n++
	}
	return n
}

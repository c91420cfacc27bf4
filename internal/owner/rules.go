package owner

import "strconv"

// The components of interconnect.io an owner is assigned to (metadata/vocabulary.yaml).
const (
	ComponentGPUPCIe   = "gpu_pcie"
	ComponentGPUNVLink = "gpu_nvlink"
	ComponentGPUC2C    = "gpu_c2c"
	ComponentRNIC      = "rnic"
	ComponentNetdev    = "netdev"
	ComponentCPUPCIe   = "cpu_pcie"
	ComponentCPUMemory = "cpu_memory"
)

// Assignment is the owner of one component instance, keyed as interconnect.io keys it:
// component and pci.bus_id (the join key), and device in words.
type Assignment struct {
	Component string
	Device    string
	PCIBusID  string
	Owner     Owner
}

// Claims maps a PCI address (a GPU or an RDMA function) to the owners the sources gave it.
type Claims map[string][]Owner

func (c Claims) add(address string, o Owner) { c[address] = append(c[address], o) }

// Assign applies the rules of ownership to the inventory and returns one assignment per component
// instance with an owner; a device nobody claimed (an idle GPU) has none, so its bytes join to no
// owner rather than to a guessed one.
//
//   - gpu_pcie, gpu_nvlink, gpu_c2c: the GPU's owner; several (time-sliced `::N` ids of several
//     pods, two Slurm jobs in one mapping file): shared. Bytes of one GPU cannot be split by pod.
//   - rnic, netdev: the owner claiming the RDMA function itself (an SR-IOV VF, or a PF handed out
//     whole); else the single owner of the GPUs whose nearest NIC it is (what NCCL picks, PIX/PXB
//     first), the idle ones not counted; else shared (several owners, or none: a storage or
//     management NIC carries everyone's traffic). A PF's rnic bytes are its physical port's, VF
//     traffic included (the PMA counters count the port), so a PF whose VFs another owner holds
//     is shared; its netdev counts the PF's own IP traffic only and keeps the PF's owner.
//   - cpu_pcie per root port: the single owner of every GPU and RDMA device below it; several, or
//     one of them shared: shared; none owned: node. cpu_pcie without a root port (an IIO stack or
//     root complex total, pci.bus_id empty): shared.
//   - cpu_memory: node. Host memory serves every process of the node; nothing in its counters says
//     whose.
func Assign(inv *Inventory, claims Claims) []Assignment {
	var out []Assignment
	byPort := map[string][]Owner{}
	gpuOwner := map[string]Owner{}
	for _, g := range inv.GPUs {
		o := one(claims[g.Address])
		if !o.Known() {
			continue
		}
		gpuOwner[g.Address] = o
		byPort[g.RootPort] = append(byPort[g.RootPort], o)
		name := g.Address
		if g.Index >= 0 {
			// The gpu receiver's device name for NVML index / DCGM id N on a node without MIG.
			name = "gpu" + strconv.Itoa(g.Index)
		}
		for _, c := range []string{ComponentGPUPCIe, ComponentGPUNVLink, ComponentGPUC2C} {
			out = append(out, Assignment{Component: c, Device: name, PCIBusID: g.Address, Owner: o})
		}
	}
	for _, n := range inv.RDMA {
		o := one(claims[n.Address])
		if !o.Known() && n.PF == "" {
			var near []Owner
			for gpu, nic := range inv.Nearest {
				if nic == n.Name {
					if g, ok := gpuOwner[gpu]; ok {
						near = append(near, g)
					}
				}
			}
			o = one(near)
			if o.Known() && o.Kind != KindShared {
				o.Source = SourceRule
			}
			if !o.Known() {
				o = Shared()
			}
		}
		if !o.Known() {
			continue // an unclaimed VF: nobody's yet
		}
		rnic := o
		if n.PF == "" {
			rnic = withVFOwners(inv, claims, n.Address, o)
		}
		byPort[n.RootPort] = append(byPort[n.RootPort], rnic)
		out = append(out, Assignment{Component: ComponentRNIC, Device: n.Name, PCIBusID: n.Address, Owner: rnic})
		for _, nd := range n.Netdevs {
			out = append(out, Assignment{Component: ComponentNetdev, Device: nd, PCIBusID: n.Address, Owner: o})
		}
	}
	for _, port := range inv.RootPorts {
		o := one(byPort[port])
		if !o.Known() {
			o = Node()
		}
		if o.Kind != KindShared && o.Kind != KindNode {
			o.Source = SourceRule
		}
		out = append(out, Assignment{Component: ComponentCPUPCIe, Device: port, PCIBusID: port, Owner: o})
	}
	out = append(out,
		Assignment{Component: ComponentCPUPCIe, Owner: Shared()},
		Assignment{Component: ComponentCPUMemory, Owner: Node()})
	return out
}

// withVFOwners adds the owners of the PF's claimed VFs to the PF's own: one owner for all, or
// shared.
func withVFOwners(inv *Inventory, claims Claims, pf string, o Owner) Owner {
	owners := []Owner{o}
	for _, vf := range inv.RDMA {
		if vf.PF == pf {
			if vo := one(claims[vf.Address]); vo.Known() {
				owners = append(owners, vo)
			}
		}
	}
	if len(owners) == 1 {
		return o
	}
	if all := one(owners); all.Kind == KindShared {
		return all
	}
	return o
}

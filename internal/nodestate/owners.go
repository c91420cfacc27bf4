package nodestate // import "github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"

import (
	"sort"
	"time"
)

// MetricOwner is the owner receiver's info series (receiver/ownerreceiver metadata.yaml): 1 while
// a pod or job owns a component instance, 0 on the one scrape after the ownership ended.
const MetricOwner = "interconnect.owner"

// Attributes of interconnect.owner beside component, device and pci.bus_id.
const (
	AttrOwnerKind    = "owner.kind"
	AttrOwnerSource  = "owner.source"
	AttrK8sNamespace = "k8s.namespace.name"
	AttrK8sPod       = "k8s.pod.name"
	AttrK8sContainer = "k8s.container.name"
	AttrJobID        = "job.id"
	AttrUserName     = "user.name"
	AttrJobPartition = "job.partition"
)

// The owner.kind values: a pod or a job owns bytes of its own; shared and node mark bytes that
// are nobody's alone (internal/owner, Assign).
const (
	OwnerPod    = "pod"
	OwnerJob    = "job"
	OwnerShared = "shared"
	OwnerNode   = "node"
)

// DeviceID is a component instance as interconnect.owner and interconnect.io both key it: the
// component and its PCI address ("" for a root-complex total or host memory). It is the join key
// of the README's PromQL (on host_name, component, pci_bus_id).
type DeviceID struct{ Component, BusID string }

// Owner is who owns a component instance's bytes, as the owner receiver names it.
type Owner struct {
	OwnerID
	Source, Container, User, Partition string
	Device                             string // the instance in words (gpu0, mlx5_1, socket0/iio3)
}

// OwnerID is an owner's identity: a pod by namespace and name (its containers are the pod's), a
// job by its id, wherever the owner came from (a GPU's owner is the Slurm mapping's, its NIC's
// the rule's, both the same job).
type OwnerID struct{ Kind, Namespace, Pod, JobID string }

// Owns reports whether the id is a pod or a job: bytes that are someone's own, not shared or the
// node's.
func (o OwnerID) Owns() bool { return o.Kind == OwnerPod || o.Kind == OwnerJob }

// String is the owner in words, for an operator's sentence.
func (o OwnerID) String() string {
	switch o.Kind {
	case OwnerPod:
		return "pod " + o.Namespace + "/" + o.Pod
	case OwnerJob:
		return "job " + o.JobID
	}
	return o.Kind
}

// readOwners fills st.Owners from the interconnect.owner series that hold at now, and st.ByOwner
// with each pod's or job's share of the node: the rates of the interconnect.io series its
// instances carry and the RDMA ports of its NICs, as the README's join computes them. Bytes whose
// instance is shared, the node's or has no owner are in no owner's state: every byte is in the
// node's state once and in at most one owner's.
func (n *Node) readOwners(st *State, now int64, window, lookback time.Duration) {
	st.Owners, _ = n.Owners(now, lookback)
	st.ByOwner = map[OwnerID]*State{}
	if len(st.Owners) == 0 {
		return
	}
	owned := func(o OwnerID) *State {
		s := st.ByOwner[o]
		if s == nil {
			s = &State{io: map[string]map[string]float64{}, Netdevs: map[string]float64{}}
			st.ByOwner[o] = s
		}
		return s
	}
	stackOwner := n.stackOwners(st, now, lookback)
	portOwner := map[string]OwnerID{} // RDMA port (mlx5_1/1) -> its NIC's owner
	for _, s := range n.series {
		if s.metric != MetricIO {
			continue
		}
		a := s.attrs
		o := st.Owners[DeviceID{a[AttrComponent], a[AttrBusID]}].OwnerID
		if a[AttrComponent] == CPUPCIe && a[AttrBusID] == "" {
			// An IIO stack's total, which the owner receiver cannot key by a root port's
			// address: the owner of every GPU and NIC the cpuuncore receiver maps behind it.
			o = stackOwner[a[AttrDevice]]
		}
		if !o.Owns() {
			continue
		}
		if a[AttrComponent] == RNIC {
			portOwner[a[AttrDevice]] = o
		}
		r, ok := s.rate(now, window)
		if !ok {
			continue
		}
		os := owned(o)
		comp, dir := a[AttrComponent], a[AttrDirection]
		d := os.io[comp]
		if d == nil {
			d = map[string]float64{}
			os.io[comp] = d
		}
		d[dir] += r
		if comp == Netdev {
			os.Netdevs[a[AttrDevice]] += r
		}
	}
	for _, p := range st.Ports {
		if o, ok := portOwner[p.Device]; ok {
			os := owned(o)
			os.Ports = append(os.Ports, p)
		}
	}
	for _, g := range st.GPUs {
		if o := st.Owners[DeviceID{GPUPCIe, g.Bus}].OwnerID; o.Owns() {
			os := owned(o)
			os.GPUs = append(os.GPUs, g)
		}
	}
	for _, os := range st.ByOwner {
		// An owner's path is its own root ports and IIO stacks (every device below them is its);
		// one it shares with another owner is nobody's.
		os.PathWrite, os.PathMapped = os.IODirection(CPUPCIe, Receive), os.Has(CPUPCIe)
		sort.Slice(os.Ports, func(i, j int) bool { return os.Ports[i].Device < os.Ports[j].Device })
	}
}

// stackOwners maps each IIO stack (cpuuncore.pcie.device) to the single pod or job that owns
// every device the cpuuncore receiver maps behind it, as internal/owner's rule gives a root port
// the single owner of the devices below it; a stack with a device of another owner, a shared one
// or one nobody owns (an NVMe drive) is nobody's.
func (n *Node) stackOwners(st *State, now int64, lookback time.Duration) map[string]OwnerID {
	owners := map[string]OwnerID{}
	mixed := map[string]bool{}
	for _, s := range n.series {
		if s.metric != MetricPCIeDevice {
			continue
		}
		if _, ok := s.value(now, lookback); !ok {
			continue
		}
		stack, bus := s.attrs[AttrDevice], s.attrs[AttrBusID]
		o := st.Owners[DeviceID{GPUPCIe, bus}].OwnerID
		if !o.Owns() {
			o = st.Owners[DeviceID{RNIC, bus}].OwnerID
		}
		if prev, seen := owners[stack]; !o.Owns() || seen && prev != o {
			mixed[stack] = true
		}
		owners[stack] = o
	}
	for stack := range mixed {
		delete(owners, stack)
	}
	return owners
}

// OwnerOf returns the owner of a component instance, the zero Owner where none is known.
func (s *State) OwnerOf(component, busID string) Owner {
	return s.Owners[DeviceID{component, busID}]
}

// OwnerIDs are the pods and jobs with a state of their own, in a stable order.
func (s *State) OwnerIDs() []OwnerID {
	ids := make([]OwnerID, 0, len(s.ByOwner))
	for id := range s.ByOwner {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
	return ids
}

// Owners returns who owns each component instance at now (ns): the interconnect.owner series that
// hold 1 within lookback, the newest where two hold. It reads no rates, so a page that only groups
// nodes by owner can ask it of every node. reported says whether the node has any owner series at
// all (an owner receiver in its pipeline), holding or not.
func (n *Node) Owners(now int64, lookback time.Duration) (owners map[DeviceID]Owner, reported bool) {
	owners = map[DeviceID]Owner{}
	newest := map[DeviceID]int64{}
	for _, s := range n.series {
		if s.metric != MetricOwner {
			continue
		}
		reported = true
		v, ok := s.value(now, lookback)
		if !ok || v != 1 {
			// 0: the ownership ended (a job switch's old owner); the new one has its own series.
			continue
		}
		a := s.attrs
		id := DeviceID{a[AttrComponent], a[AttrBusID]}
		// Two owners holding at once (the old job's end and the new one's start within one
		// lookback, the 0 lost): the newest wins, as the owner receiver emits the current one.
		if t, seen := newest[id]; seen && t >= s.last.t {
			continue
		}
		newest[id] = s.last.t
		owners[id] = Owner{
			OwnerID: OwnerID{Kind: a[AttrOwnerKind], Namespace: a[AttrK8sNamespace], Pod: a[AttrK8sPod], JobID: a[AttrJobID]},
			Source:  a[AttrOwnerSource], Container: a[AttrK8sContainer], User: a[AttrUserName], Partition: a[AttrJobPartition],
			Device: a[AttrDevice],
		}
	}
	return owners, reported
}

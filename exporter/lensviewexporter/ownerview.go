package lensviewexporter // import "github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter"

import (
	"errors"
	"slices"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// The node page narrowed to one pod or job (/api/node?owner=, the page's #node=…&owner=…): its
// devices' lines, ports and verdicts, with the bytes that are nobody's alone (a shared NIC, the
// root complex and host memory, which the view sums per node) kept beside them. Who owns what is
// the owner receiver's interconnect.owner, read once by internal/nodestate.

// ownerRef is an owner in the API and the page's address: "job:<id>" or "pod:<namespace>/<name>";
// "" for the node itself.
func ownerRef(o nodestate.OwnerID) string {
	switch o.Kind {
	case nodestate.OwnerJob:
		return nodestate.OwnerJob + ":" + o.JobID
	case nodestate.OwnerPod:
		return nodestate.OwnerPod + ":" + o.Namespace + "/" + o.Pod
	}
	return ""
}

var errOwnerRef = errors.New("owner: job:<id> or pod:<namespace>/<name>")

// parseOwnerRef is ownerRef's inverse; "" is the zero owner (no filter).
func parseOwnerRef(s string) (nodestate.OwnerID, error) {
	if s == "" {
		return nodestate.OwnerID{}, nil
	}
	kind, rest, _ := strings.Cut(s, ":")
	switch kind {
	case nodestate.OwnerJob:
		if rest != "" {
			return nodestate.OwnerID{Kind: kind, JobID: rest}, nil
		}
	case nodestate.OwnerPod:
		if ns, pod, ok := strings.Cut(rest, "/"); ok && ns != "" && pod != "" {
			return nodestate.OwnerID{Kind: kind, Namespace: ns, Pod: pod}, nil
		}
	}
	return nodestate.OwnerID{}, errOwnerRef
}

// verdictOwner is the owner a connector's verdict point or log record is about
// (internal/verdict's owner attributes), the zero owner for the node's own and for a device
// nobody owns.
func verdictOwner(a pcommon.Map) nodestate.OwnerID {
	switch kind := attr(a, verdict.AttrOwnerKind); kind {
	case nodestate.OwnerJob:
		return nodestate.OwnerID{Kind: kind, JobID: attr(a, verdict.AttrJobID)}
	case nodestate.OwnerPod:
		return nodestate.OwnerID{Kind: kind, Namespace: attr(a, verdict.AttrK8sNamespace), Pod: attr(a, verdict.AttrK8sPod)}
	}
	return nodestate.OwnerID{}
}

// ownerJSON is one pod or job of the node in /api/node: the id to filter by, the owner in words
// and its devices as the owner receiver names them.
type ownerJSON struct {
	ID      string   `json:"id"`
	Label   string   `json:"label"`
	Devices []string `json:"devices"`
}

// nodeOwners are the pods and jobs that own a device of the node now, in a stable order.
func nodeOwners(st *nodestate.State) []ownerJSON {
	byID := map[nodestate.OwnerID][]string{}
	for _, o := range st.Owners {
		if o.Owns() {
			byID[o.OwnerID] = append(byID[o.OwnerID], o.Device)
		}
	}
	out := make([]ownerJSON, 0, len(byID))
	for id, devs := range byID {
		sort.Strings(devs)
		out = append(out, ownerJSON{ID: ownerRef(id), Label: id.String(), Devices: slices.Compact(devs)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// ownerFilter narrows a node's view to one owner; a nil filter keeps the whole node.
type ownerFilter struct {
	id nodestate.OwnerID
	// kept are the view's device names (a GPU, an RDMA port, a netdev) the filter keeps: the
	// owner's, and those whose bytes are shared or the node's.
	kept map[string]bool
}

// newOwnerFilter reads who owns each of the node's lines from the PCI address its interconnect.io
// points carry (the owner receiver keys a device by component and address); the lines without
// one (a port's congestion counters, a GPU's memory activity and bursts) follow the device they
// are named after, a communicator's its GPU.
func newOwnerFilter(id nodestate.OwnerID, st *nodestate.State, n *node) *ownerFilter {
	f := &ownerFilter{id: id, kept: map[string]bool{}}
	for _, sr := range n.series {
		if sr.bus == "" {
			continue
		}
		o := st.OwnerOf(sr.component, sr.bus)
		if o.OwnerID == id || o.Kind == nodestate.OwnerShared || o.Kind == nodestate.OwnerNode {
			f.kept[sr.device] = true
		}
	}
	// An NCCL communicator's bus bandwidth lines (device: its id) are the owner's when its GPU on
	// this node is (nodestate.Collective.Bus).
	for _, c := range st.Collectives {
		if c.Bus != "" && st.OwnerOf(nodestate.GPUPCIe, c.Bus).OwnerID == id {
			f.kept[c.Comm] = true
		}
	}
	return f
}

// owner is the filter's owner, the zero owner (the node's own) for no filter.
func (f *ownerFilter) owner() nodestate.OwnerID {
	if f == nil {
		return nodestate.OwnerID{}
	}
	return f.id
}

// keepsDevice reports whether the view keeps a device's line or port row; "" is a per-node sum
// (the root complex, host memory), kept.
func (f *ownerFilter) keepsDevice(device string) bool {
	return f == nil || device == "" || f.kept[device]
}

// keepsDeviceVerdict reports whether a device verdict belongs in the filtered view: one the
// connector raised under the owner, or one of a device nobody owns alone whose lines the view
// keeps (a shared NIC's port, a communicator of the owner's GPU).
func (f *ownerFilter) keepsDeviceVerdict(k diagKey, owners map[string]nodestate.OwnerID) bool {
	if f == nil || k.owner == f.id {
		return true
	}
	return !k.owner.Owns() && owners[k.device] == (nodestate.OwnerID{}) && f.keepsVerdictDevice(k.device)
}

// keepsChange reports whether a verdict change belongs in the filtered log: the owner's own
// node-level changes, and its devices' as keepsDeviceVerdict decides them. A device's log record
// names no owner: the owner its holding verdict carries does, else the lines the view keeps.
func (f *ownerFilter) keepsChange(k diagKey, owners map[string]nodestate.OwnerID) bool {
	if f == nil || k.owner == f.id {
		return true
	}
	if k.owner.Owns() || k.device == "" {
		return false // another owner's, or the node's own
	}
	if o, ok := owners[k.device]; ok {
		return o == f.id
	}
	return f.keepsVerdictDevice(k.device)
}

// keepsVerdictDevice matches a verdict's device to the lines the view keeps: a port or GPU by its
// name, a NIC by its ports (mlx5_0 for mlx5_0/1), a communicator's collective by the communicator
// (<comm>/AllReduce).
func (f *ownerFilter) keepsVerdictDevice(device string) bool {
	if f.kept[device] {
		return true
	}
	if comm, _, ok := strings.Cut(device, "/"); ok && f.kept[comm] {
		return true
	}
	for d := range f.kept {
		if strings.HasPrefix(d, device+"/") {
			return true
		}
	}
	return false
}

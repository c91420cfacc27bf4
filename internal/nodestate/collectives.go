package nodestate // import "github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/internal/natorder"
)

// The nccl receiver's metrics a node's collectives are made of (receiver/ncclreceiver
// metadata.yaml): the newest Inspector record's bus bandwidth and the records taken, per
// communicator, rank, collective type and message-size bucket; the RAS service's ranks by state and
// operation counts per communicator.
const (
	MetricCollBusBandwidth = "nccl.collective.last_bus_bandwidth"
	MetricCollSamples      = "nccl.collective.samples"
	MetricRASRanks         = "nccl.ras.ranks"
	MetricRASOperations    = "nccl.ras.operations"
)

// Attributes of those metrics.
const (
	AttrCommID      = "nccl.comm.id"
	AttrCommName    = "nccl.comm.name"
	AttrCommSize    = "nccl.comm.size"
	AttrCommNodes   = "nccl.comm.nodes"
	AttrRank        = "nccl.rank"
	AttrCollective  = "nccl.collective"
	AttrMessageSize = "nccl.message_size"
	AttrRankState   = "rank.state"
	AttrBound       = "bound"
)

// LargeMessageBuckets are the nccl receiver's message-size buckets (nccl.message_size) of 64 MiB
// and more: messages large enough for a collective to reach the bandwidth its path carries.
// nccl-tests' bus bandwidth curves (doc/PERFORMANCE.md) flatten out from a few tens of MiB on
// InfiniBand and RoCE; below, latency, not the links, sets the bus bandwidth, so a small
// collective's low bus bandwidth says nothing about the hardware.
var LargeMessageBuckets = []string{"64MiB-256MiB", "256MiB-1GiB", "1GiB-4GiB", ">=4GiB"}

// FailedRankStates are the RAS rank states of a rank that no longer takes part in the
// communicator's collectives (the nccl receiver's rank.state: RAS reports a missing rank as
// unresponsive or dead, src/ras/client_support.cc; a rank that hit an asynchronous error or was
// aborted stops issuing operations).
var FailedRankStates = []string{"missing", "unresponsive", "dead", "async_error", "aborted"}

// Collective is one NCCL communicator as this node sees it: its ranks on the node (Inspector) and
// the whole job's ranks (RAS).
type Collective struct {
	// Comm is the communicator's hash (nccl.comm.id), the same in Inspector and RAS.
	Comm string
	// Name is its commName where NCCL gives one, Size its ranks, Nodes the nodes they are on
	// (the Inspector's nnodes; 0 where no record says, 1 for a communicator within the node).
	Name  string
	Size  int
	Nodes int
	// Bus is the PCI address of the GPU of its lowest rank on this node, "" where the receiver
	// could not join the rank's process to a GPU; GPU is that GPU's name (GPU.Name).
	Bus, GPU string
	// Buses are the PCI addresses of the GPUs of all its ranks on this node, sorted, "" among
	// them where a rank's process was not joined to a GPU.
	Buses []string
	// Ops are its collective types by name (AllReduce), in natural order.
	Ops []CollectiveOp
	// Ranks are the job's ranks by RAS state (running, dead, ...); nil without RAS.
	Ranks map[string]float64
	// Operations is the sum over collective types of the highest operation count among its
	// ranks (RAS), and OperationsAt the time of the newest sample (ns); -1 and 0 without RAS.
	// OperationsBefore is the same sum at the samples before (a type seen once counts 0 there).
	Operations, OperationsBefore float64
	OperationsAt                 int64
}

// CollectiveOp is one collective type of a communicator.
type CollectiveOp struct {
	Name string
	// BusBandwidth is the highest bus bandwidth (bytes/s) of the newest records of its large
	// messages (LargeMessageBuckets) over the node's ranks; NaN where it ran none.
	BusBandwidth float64
	// Records is the Inspector records/s taken for it over the window (irate), NaN without two
	// samples in the window.
	Records float64
}

// WithinNode reports whether the communicator's ranks are all on this node (the Inspector says
// one node): its bytes move over NVLink or PCIe between the GPUs, and no NIC is on its path.
func (c Collective) WithinNode() bool { return c.Nodes == 1 }

// Failed is how many of the job's ranks RAS reports in a failed state (FailedRankStates).
func (c Collective) Failed() float64 {
	var n float64
	for _, s := range FailedRankStates {
		n += c.Ranks[s]
	}
	return n
}

// Op returns the collective type named name.
func (c Collective) Op(name string) (CollectiveOp, bool) {
	for _, o := range c.Ops {
		if o.Name == name {
			return o, true
		}
	}
	return CollectiveOp{}, false
}

// Collective returns the communicator comm.
func (s *State) Collective(comm string) (Collective, bool) {
	for _, c := range s.Collectives {
		if c.Comm == comm {
			return c, true
		}
	}
	return Collective{}, false
}

func init() {
	// The nccl receiver's series are part of a node's state (Reads).
	counters[MetricCollSamples] = true
	for _, m := range []string{MetricCollBusBandwidth, MetricRASRanks, MetricRASOperations} {
		gauges[m] = true
	}
}

func isLarge(bucket string) bool {
	for _, b := range LargeMessageBuckets {
		if b == bucket {
			return true
		}
	}
	return false
}

// collectives reads the nccl receiver's series at now: the bus bandwidths and RAS states as their
// newest value within lookback, the records as their irate over window; gpuName maps a GPU's PCI
// address to its name.
func (n *Node) collectives(now int64, window, lookback time.Duration, gpuName func(string) string) []Collective {
	comms := map[string]*Collective{}
	type opKey struct{ comm, op string }
	ops := map[opKey]*CollectiveOp{}
	lowestRank := map[string]int{}
	comm := func(id string) *Collective {
		c := comms[id]
		if c == nil {
			c = &Collective{Comm: id, Operations: -1, OperationsBefore: -1}
			comms[id] = c
		}
		return c
	}
	op := func(id, name string) *CollectiveOp {
		k := opKey{id, name}
		o := ops[k]
		if o == nil {
			o = &CollectiveOp{Name: name, BusBandwidth: math.NaN(), Records: math.NaN()}
			ops[k] = o
		}
		return o
	}
	for _, s := range n.series {
		a := s.attrs
		id := a[AttrCommID]
		switch s.metric {
		case MetricCollSamples:
			if r, ok := s.rate(now, window); ok {
				o := op(id, a[AttrCollective])
				if math.IsNaN(o.Records) {
					o.Records = 0
				}
				o.Records += r
			}
		case MetricCollBusBandwidth:
			v, ok := s.value(now, lookback)
			if !ok {
				continue
			}
			c := comm(id)
			if c.Name == "" {
				c.Name = a[AttrCommName]
			}
			if size, err := strconv.Atoi(a[AttrCommSize]); err == nil {
				c.Size = size
			}
			if nodes, err := strconv.Atoi(a[AttrCommNodes]); err == nil {
				c.Nodes = nodes
			}
			if !slices.Contains(c.Buses, a[AttrBusID]) {
				c.Buses = append(c.Buses, a[AttrBusID])
			}
			if rank, err := strconv.Atoi(a[AttrRank]); err == nil {
				if low, seen := lowestRank[id]; !seen || rank < low {
					lowestRank[id] = rank
					c.Bus = a[AttrBusID]
				}
			}
			o := op(id, a[AttrCollective])
			if isLarge(a[AttrMessageSize]) && (math.IsNaN(o.BusBandwidth) || v*1e9 > o.BusBandwidth) {
				o.BusBandwidth = v * 1e9 // GBy/s
			}
		case MetricRASRanks:
			v, ok := s.value(now, lookback)
			if !ok {
				continue
			}
			c := comm(id)
			if c.Ranks == nil {
				c.Ranks = map[string]float64{}
			}
			c.Ranks[a[AttrRankState]] += v
			if size, err := strconv.Atoi(a[AttrCommSize]); err == nil && c.Size == 0 {
				c.Size = size
			}
		case MetricRASOperations:
			if a[AttrBound] != "max" {
				continue
			}
			v, ok := s.value(now, lookback)
			if !ok {
				continue
			}
			c := comm(id)
			c.Operations = math.Max(c.Operations, 0) + v
			if s.last.t > c.OperationsAt {
				c.OperationsAt = s.last.t
			}
			// A collective type seen for the first time counted 0 before.
			before := 0.0
			if s.n >= 2 {
				before = s.prev.v
			}
			c.OperationsBefore = math.Max(c.OperationsBefore, 0) + before
		}
	}
	for k, o := range ops {
		c := comm(k.comm)
		c.Ops = append(c.Ops, *o)
	}
	out := make([]Collective, 0, len(comms))
	for _, c := range comms {
		if c.Bus != "" {
			c.GPU = gpuName(c.Bus)
		}
		sort.Strings(c.Buses)
		sort.Slice(c.Ops, func(i, j int) bool { return natorder.Compare(c.Ops[i].Name, c.Ops[j].Name) < 0 })
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return natorder.Compare(out[i].Comm, out[j].Comm) < 0 })
	return out
}

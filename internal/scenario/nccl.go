package scenario

import (
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
)

// The simulated job's NCCL side, as the nccl receiver reports it (receiver/ncclreceiver
// metadata.yaml). Each training step AllReduces the 4 x Params bytes of gradients in OpsPerStep
// equal buckets (PyTorch DDP's gradient buckets), one communicator of GPUs ranks, one rank a node.
// Every operation's transfer runs at the rate the node's transport carries (its port, or its
// netdevs after a fallback), and for the model's ring of 2 ranks that rate is the bus bandwidth:
// the Inspector reports algorithm bandwidth times the collective's factor
// (ext-profiler/inspector/inspector.cc inspectorComputeOpBw, after nccl-tests doc/PERFORMANCE.md:
// 2(n-1)/n for AllReduce, (n-1)/n for AllGather and ReduceScatter, 1 for Broadcast and Reduce), and
// a ring AllReduce sends 2(n-1)/n of the message over each link, so bus bandwidth is the link's
// rate whatever n. A Broadcast sends the message once over each link: algorithm and bus
// bandwidth are that rate too.
const (
	// OpsPerStep is how many collectives a step's gradients take.
	OpsPerStep = 20
	// MessageBytes is one operation's message, 260 MB.
	MessageBytes = 4 * Params / OpsPerStep
	// MessageBucket is the nccl receiver's message-size bucket of MessageBytes (248 MiB).
	MessageBucket = "64MiB-256MiB"
	// NCCLPIDBase is the pid of node n's rank process, NCCLPIDBase+n.
	NCCLPIDBase = 4100
)

// NCCLJob is what a node's NCCL job does during a phase; the zero value is a node whose job
// reports nothing to the nccl receiver (no Inspector, no RAS).
type NCCLJob struct {
	// Op is the collective the job runs.
	Op string
	// DeadRanks is how many of the job's ranks RAS reports dead (their process is gone).
	DeadRanks int
	// LateSeconds is how much longer than its peers the node computes each step (a throttled
	// GPU): its ranks arrive that late in the step's collectives and wait in none, while its
	// peers' wait for them (their Traffic's rate, the step's, holds the wait).
	LateSeconds float64
}

// CollectiveSlow and CollectiveStalled are the verdicts on a communicator (internal/verdict).
const (
	CollectiveSlow    = "collective_slow"
	CollectiveStalled = "collective_stalled"
)

// CommID is the case's communicator hash, as the Inspector and RAS print it ("0x%lx").
func CommID(c Case) string {
	h := fnv.New64a()
	h.Write([]byte(c.Name))
	return fmt.Sprintf("0x%x", h.Sum64()>>8)
}

// TransportRate is the rate node traffic t's job moves its bytes at: the larger of what its port
// and its netdevs carry (RDMA, or the socket transport after a fallback).
func (t Traffic) TransportRate() float64 {
	return max(t.RNICTx, t.NetdevTx, t.SecondNetdevTx, t.RNICRx, t.NetdevRx)
}

// BusBandwidth is the bus bandwidth (bytes/s) of node traffic t's operations: the rate its
// transport carries a step's bytes at while they move (TransferSeconds: the step's average rate
// less its compute part).
func (t Traffic) BusBandwidth() float64 {
	return AllReduceBytes() / (TransferSeconds(t.TransportRate()) - t.NCCL.LateSeconds)
}

// OpTransferSeconds is how long one operation of node traffic t takes.
func (t Traffic) OpTransferSeconds() float64 { return MessageBytes / t.BusBandwidth() }

// OpsPerSecond is how many operations node traffic t's job completes a second: a step of a GPU
// that sends avg bytes/s on average lasts AllReduceBytes / avg and holds OpsPerStep operations.
func (t Traffic) OpsPerSecond() float64 {
	// The control plane's IP bytes (bootstrap, monitoring) are not the job's collectives: a
	// node that moves no more computes.
	if t.NCCL.Op == "" || t.NCCL.DeadRanks > 0 || t.TransportRate() <= controlIP {
		return 0
	}
	return t.TransportRate() * OpsPerStep / AllReduceBytes()
}

// BusBwFactor is the Inspector's factor for op on n ranks (inspectorComputeOpBw).
func BusBwFactor(op string, n int) float64 {
	switch op {
	case "AllReduce":
		return 2 * float64(n-1) / float64(n)
	case "AllGather", "AllGatherV", "ReduceScatter":
		return float64(n-1) / float64(n)
	}
	return 1
}

// WithNCCL is c with a job that runs op on every node and phase that has none, its expectations
// unchanged.
func (c Case) WithNCCL(op string) Case {
	out := Case{Name: c.Name, Note: c.Note}
	for _, ph := range c.Phases {
		for n := range ph.Nodes {
			if ph.Nodes[n].NCCL.Op == "" {
				ph.Nodes[n].NCCL.Op = op
			}
		}
		out.Phases = append(out.Phases, ph)
	}
	return out
}

// NCCLCases are the cases whose job reports to the nccl receiver: a case of Cases with the job's
// collectives (nccl_<case>), a job slowed without a hardware cause, and a rank that dies.
func NCCLCases() []Case {
	var out []Case
	with := func(name string, add ...string) *Case {
		for _, c := range Cases() {
			if c.Name != name {
				continue
			}
			nc := Case{Name: "nccl_" + name, Note: c.Note + "; NCCL reports its collectives"}
			for _, ph := range c.WithNCCL("AllReduce").Phases {
				for n := range ph.Nodes {
					ph.Expect[n] = append(append([]string(nil), ph.Expect[n]...), expandCollective(nc, add, ph.Nodes[n])...)
				}
				nc.Phases = append(nc.Phases, ph)
			}
			out = append(out, nc)
			return &out[len(out)-1]
		}
		panic("scenario: no case " + name)
	}
	// collective_slow wherever the bus bandwidth is below half what the port carries: the
	// fallback's 2.8 GB/s and the congested port's 2.46 GB/s of 12.5.
	with("healthy_allreduce")
	with("compute_only")
	with("tcp_fallback", CollectiveSlow)
	with("congestion_20g", CollectiveSlow)
	with("transition_tcp_fallback", CollectiveSlow)

	// Across nodes (waits_on_peer): node1's port trained down to 50 Gb/s at boot, and node2,
	// healthy, runs the ring at node1's pace: it waits on node1. The AllReduce's bus bandwidth is
	// below half the 100 Gb/s the nodes' ports can carry, on both.
	boot := with("trained_down_at_boot", CollectiveSlow)
	boot.Phases[0].Expect[1] = append(boot.Phases[0].Expect[1], On(WaitsOnPeer, HostName(*boot, Nodes[0])))
	out = append(out, peerBounce(), straggler())

	// The job is slow while the hardware is healthy: NCCL limited to one channel
	// (NCCL_MAX_NCHANNELS=1) moves 4 GB/s over a 12.5 GB/s port, RDMA all the way, the host
	// quiet.
	slow := healthy(stepRate(4e9), stepRate(4e9))
	slow.NCCL = NCCLJob{Op: "AllReduce"}
	c := Case{Name: "nccl_slow_no_hardware_cause",
		Note: "AllReduce at 4 GB/s bus bandwidth over a healthy 100 Gb/s GPUDirect RDMA path (NCCL_MAX_NCHANNELS=1): slow, the hardware healthy"}
	c.Phases = []Phase{{Nodes: [2]Traffic{slow, slow}}}
	c.Phases[0].Expect = both(HealthyGPUDirect, On(CollectiveSlow, CommID(c)+"/AllReduce"))
	out = append(out, c)

	// node2's rank dies a minute in (its process killed: RAS reports it dead); node1's rank
	// waits in the collective forever, the network falls quiet.
	gdr := stepRate(lineRate * rdmaEfficiency)
	run := healthy(gdr, gdr)
	run.NCCL = NCCLJob{Op: "AllReduce"}
	hung := healthy(controlIP, controlIP)
	hung.SMActive, hung.DRAMActive = 0, 0
	hung.NCCL = NCCLJob{Op: "AllReduce", DeadRanks: 1}
	h := Case{Name: "nccl_rank_dies",
		Note: "node2's rank dies a minute in (RAS: 1 rank dead): the AllReduce hangs, the network falls quiet"}
	h.Phases = []Phase{
		{From: 0, Nodes: [2]Traffic{run, run}, Expect: both(HealthyGPUDirect)},
		{From: TransitionFault, Nodes: [2]Traffic{hung, hung}, Expect: both(Idle, On(CollectiveStalled, CommID(h)))},
	}
	out = append(out, h)
	return out
}

// peerBounce is a ring of two nodes of which one stops using GPUDirect RDMA for 40 s: a job
// restarted with NCCL_NET_GDR_LEVEL=LOC in that node's environment alone (a per-node
// environment file), so that node1 stages every byte in host memory at 70 % of the healthy rate,
// and node2, healthy, runs the ring at node1's pace: on its own it looks healthy at a lower rate;
// it waits on node1.
func peerBounce() Case {
	gdr := stepRate(lineRate * rdmaEfficiency)
	slowed := stepRate(lineRate * rdmaEfficiency * 0.7)
	c := Case{Name: "nccl_peer_gdr_bounce",
		Note: "node1 stages every byte in host memory a minute in (NCCL_NET_GDR_LEVEL=LOC on that node alone, 70 % of the rate); node2, healthy, runs the ring at its pace and waits on it; NCCL reports the collectives"}
	ok := both(HealthyGPUDirect)
	c.Phases = []Phase{
		{From: 0, Nodes: [2]Traffic{healthy(gdr, gdr), healthy(gdr, gdr)}, Expect: ok},
		{From: TransitionFault, Nodes: [2]Traffic{stagedAt(slowed), healthy(slowed, slowed)},
			Expect: [2][]string{{GPUDirectBounce}, {HealthyGPUDirect, On(WaitsOnPeer, HostName(c, Nodes[0]))}}},
		{From: TransitionClear, Nodes: [2]Traffic{healthy(gdr, gdr), healthy(gdr, gdr)}, Expect: ok},
	}
	return c.WithNCCL("AllReduce")
}

// straggler is a ring of two nodes of which node1 computes each step 0.9 s longer than node2 (its
// GPU throttled): node2's ranks wait that long in every AllReduce for node1's. The ports carry the
// same bytes on both nodes, at the step's pace; the Inspector's bus bandwidth is the link's on
// node1 (its ranks wait for no one) and a third of it on node2 (the transfer and twice as long
// waiting): node1 is the straggler, node2 waits on it, and node2's AllReduce is slow.
func straggler() Case {
	transfer := AllReduceBytes() / (lineRate * rdmaEfficiency)
	late := 2 * transfer
	rate := AllReduceBytes() / (computeSeconds + late + transfer)
	slow, waiting := healthy(rate, rate), healthy(rate, rate)
	slow.NCCL = NCCLJob{Op: "AllReduce", LateSeconds: late}
	waiting.NCCL = NCCLJob{Op: "AllReduce"}
	c := Case{Name: "nccl_straggler",
		Note: "node1 computes each step 0.9 s longer (a throttled GPU): node2's ranks wait in every AllReduce for node1's, the links healthy on both"}
	op := On(CollectiveSlow, CommID(c)+"/AllReduce")
	c.Phases = []Phase{{Nodes: [2]Traffic{slow, waiting}, Expect: [2][]string{
		{HealthyGPUDirect, On(Straggler, CommID(c)+"/AllReduce")},
		{HealthyGPUDirect, On(WaitsOnPeer, HostName(c, Nodes[0])), op}}}}
	return c
}

// expandCollective names the communicator verdicts of add for case c.
func expandCollective(c Case, add []string, t Traffic) []string {
	var out []string
	for _, v := range add {
		if v == CollectiveSlow && t.BusBandwidth() >= lineRate/2 {
			continue // the healthy phases of a transition
		}
		out = append(out, On(v, CommID(c)+"/"+t.NCCL.Op))
	}
	return out
}

// NCCLRun follows node n's NCCL job sample by sample: what the Inspector dumps and RAS report
// (the nccl receiver's sources, written by tools/simulate and rendered by Stream alike).
type NCCLRun struct {
	c        Case
	n        int
	interval float64
	ops      [GPUs]float64 // operations completed so far, per node (fractional)
	sample   NCCLSample
}

// NCCLSample is node n's NCCL job at the end of one sample.
type NCCLSample struct {
	Job NCCLJob
	// Ops are the operations each rank completed so far (its RAS collective count).
	Ops [GPUs]uint64
	// Record: an operation completed during the sample, so the Inspector dumped one record, the
	// latest (2.28's latest-snapshot model, inspector.cc inspectorCommInfoDump); Records counts
	// them so far, BusBandwidth (bytes/s) and TransferSeconds are the newest record's.
	Record          bool
	Records         uint64
	BusBandwidth    float64
	TransferSeconds float64
}

// NCCLRun starts following node n of c, samples interval seconds apart.
func (c Case) NCCLRun(n int, interval float64) *NCCLRun {
	return &NCCLRun{c: c, n: n, interval: interval}
}

// Next advances to sample i (called for i = 0, 1, ... in order).
func (r *NCCLRun) Next(i int) NCCLSample {
	tr := r.c.At(i, r.n)
	before := math.Floor(r.ops[r.n])
	for m := range r.ops {
		r.ops[m] += r.interval * r.c.At(i, m).OpsPerSecond()
		r.sample.Ops[m] = uint64(r.ops[m])
	}
	r.sample.Job = tr.NCCL
	r.sample.Record = math.Floor(r.ops[r.n]) > before
	if r.sample.Record {
		r.sample.Records++
		r.sample.BusBandwidth = tr.BusBandwidth()
		r.sample.TransferSeconds = tr.OpTransferSeconds()
	}
	return r.sample
}

// ncclPoints appends the nccl receiver's points of one sample to pts.
func (c Case) ncclPoints(pts []Point, s NCCLSample, n int) []Point {
	op := s.Job.Op
	if op == "" {
		return pts
	}
	comm := CommID(c)
	if s.Records > 0 {
		a := func() map[string]string {
			return map[string]string{"nccl.comm.id": comm, "nccl.comm.name": "unknown", "nccl.comm.size": strconv.Itoa(GPUs), "nccl.comm.nodes": strconv.Itoa(GPUs),
				"nccl.rank": strconv.Itoa(n), "nccl.collective": op, "nccl.message_size": MessageBucket, "pci.bus_id": gpuBusID}
		}
		pts = append(pts, Point{Metric: "nccl.collective.samples", Attrs: a(), Value: float64(s.Records), Counter: true},
			Point{Metric: "nccl.collective.last_bus_bandwidth", Attrs: a(), Value: s.BusBandwidth / 1e9})
	}
	// RAS (src/ras/client_support.cc): the job's ranks by state and the operation counts of the
	// ranks still running, lowest and highest.
	dead := s.Job.DeadRanks
	for _, state := range []string{"running", "initializing", "async_error", "finalized", "aborted", "missing", "unresponsive", "dead"} {
		v := 0
		switch state {
		case "running":
			v = GPUs - dead
		case "dead":
			v = dead
		}
		pts = append(pts, Point{Metric: "nccl.ras.ranks", Attrs: map[string]string{"nccl.comm.id": comm, "nccl.comm.size": strconv.Itoa(GPUs), "rank.state": state}, Value: float64(v)})
	}
	lo, hi := RASOperations(s)
	for _, b := range []struct {
		bound string
		v     uint64
	}{{"min", lo}, {"max", hi}} {
		pts = append(pts, Point{Metric: "nccl.ras.operations", Attrs: map[string]string{"nccl.comm.id": comm, "nccl.collective": op, "bound": b.bound}, Value: float64(b.v)})
	}
	return pts
}

// RASOperations are the lowest and highest operation counts among the job's running ranks (the
// first GPUs - DeadRanks; a dead rank reports none).
func RASOperations(s NCCLSample) (lo, hi uint64) {
	lo = math.MaxUint64
	for m := 0; m < GPUs-s.Job.DeadRanks; m++ {
		lo, hi = min(lo, s.Ops[m]), max(hi, s.Ops[m])
	}
	if lo > hi {
		lo = 0
	}
	return lo, hi
}

package scenario

import "time"

// Bursts is traffic that moves in line-rate bursts: a data-parallel step's gradient exchange at
// line rate for Burst, then the compute phase with the link idle, every Every (the step shape of
// the JANOG55 talk). The recordings of such a case carry the fast sampler's sub-interval samples,
// taken every Sample.
type Bursts struct {
	Burst, Every, Sample time.Duration
	// Rate is the bytes/s during a burst.
	Rate float64
}

// JANOGStep is 40 ms at the ConnectX-6 Dx port's line rate every 600 ms, sampled every 10 ms: a
// 1 s (or 10 s) average says 6.7 % where the link was saturated for 40 ms of every step. The PMA
// data counters count every data octet of a packet, headers included (IBA PortXmitData), so at
// line rate they move at the full 100 Gb/s.
var JANOGStep = Bursts{Burst: 40 * time.Millisecond, Every: 600 * time.Millisecond, Sample: 10 * time.Millisecond, Rate: lineRate}

// LineRate is the simulated port's line rate, bytes/s.
const LineRate = lineRate

// Average is the bytes/s the bursts average to.
func (b Bursts) Average() float64 { return b.Rate * b.Burst.Seconds() / b.Every.Seconds() }

// Bytes is what the bursts moved by elapsed time e since the first began (at 0).
func (b Bursts) Bytes(e time.Duration) float64 {
	full := e / b.Every
	in := min(e%b.Every, b.Burst)
	return b.Rate * (time.Duration(full)*b.Burst + in).Seconds()
}

// BurstCase is the bursty case's name.
const BurstCase = "bursty_allreduce"

// BurstCongestionStep is 180 ms at line rate every 600 ms: 30 % on average, the link saturated
// for almost a third of every step, long enough for the switch's queue to fill and mark.
var BurstCongestionStep = Bursts{Burst: 180 * time.Millisecond, Every: 600 * time.Millisecond, Sample: 10 * time.Millisecond, Rate: lineRate}

// BurstCongestionCase is the case of congestion in bursts: BurstCongestionStep with a few ECN
// marks and CNPs, fewer per packet than sustained congestion needs (2.4e-4 of the packets both
// ways, the connector's congestion_min_marks_per_packet is 1e-3): the average looks like a
// healthy port at 30 %.
const BurstCongestionCase = "bursty_congestion"

// BurstShares are the shares of the line rate the rnic receiver counts time above by default
// (receiver/rnicreceiver config.go, bursts.shares).
var BurstShares = []float64{0.5, 0.9}

// BurstCases are the cases whose traffic comes in bursts (BurstsOf), with the fast sampler's
// metrics in their streams. They are not among Cases (the recordings every end-to-end test
// replays) but among StreamCases, which the diagnosis's unit and promtool tests judge: a healthy
// AllReduce saturated in bursts stays healthy, one whose bursts are marked is congestion.
func BurstCases() []Case {
	avg := JANOGStep.Average()
	t := healthy(avg, avg)
	congested := healthy(BurstCongestionStep.Average(), BurstCongestionStep.Average())
	congested.CNPSentPerSec, congested.CNPHandledPerSec, congested.ECNMarkedPerSec = 150, 100, 200
	return []Case{
		{Name: BurstCase,
			Note:   "GPUDirect RDMA AllReduce in 40 ms line-rate bursts every 600 ms (compute in between): 6.7 % on average, saturated in bursts",
			Phases: []Phase{{Nodes: [2]Traffic{t, t}, Expect: both(HealthyGPUDirect)}}},
		{Name: BurstCongestionCase,
			Note: "AllReduce in 180 ms line-rate bursts every 600 ms, 30 % on average, the bursts marked (200 ECN marks/s, 250 CNPs/s: " +
				"2.4e-4 of the packets): congestion in bursts, not a healthy port at 30 %",
			Phases: []Phase{{Nodes: [2]Traffic{congested, congested}, Expect: both(FabricCongestion)}}},
	}
}

// BurstsOf returns the burst shape of a case of BurstCases.
func BurstsOf(c Case) (Bursts, bool) {
	switch c.Name {
	case BurstCase:
		return JANOGStep, true
	case BurstCongestionCase:
		return BurstCongestionStep, true
	}
	return Bursts{}, false
}

// TimeAbove is the share of time the bursts run at or above share of a line of line bytes/s.
func (b Bursts) TimeAbove(share, line float64) float64 {
	if b.Rate < share*line {
		return 0
	}
	return b.Burst.Seconds() / b.Every.Seconds()
}

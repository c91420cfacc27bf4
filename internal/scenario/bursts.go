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

// BurstCases are the cases whose traffic comes in bursts (BurstsOf). They are not among Cases: the
// diagnosis's tests judge those; these show what a collection interval's average hides.
func BurstCases() []Case {
	avg := JANOGStep.Average()
	t := healthy(avg, avg)
	return []Case{{Name: BurstCase,
		Note:   "GPUDirect RDMA AllReduce in 40 ms line-rate bursts every 600 ms (compute in between): 6.7 % on average, saturated in bursts",
		Phases: []Phase{{Nodes: [2]Traffic{t, t}, Expect: both(HealthyGPUDirect)}}}}
}

// BurstsOf returns the burst shape of a case of BurstCases.
func BurstsOf(c Case) (Bursts, bool) {
	if c.Name == BurstCase {
		return JANOGStep, true
	}
	return Bursts{}, false
}

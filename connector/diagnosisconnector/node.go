package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"

import (
	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
)

// node is everything the connector keeps about one node: its state's samples (nodestate) and
// what the last evaluations decided.
type node struct {
	*nodestate.Node

	// streak counts, per verdict and device, the consecutive evaluations its condition held.
	streak map[verdictKey]int
	// nodeHeld is the node's last traffic verdict that held, deviceHeld the device verdicts that
	// hold: what the logs reported last.
	nodeHeld   string
	deviceHeld map[verdictKey]bool
	// portPeaks remembers the rates each port reported, for link_degraded.
	portPeaks map[string][]ratePoint
	// ops remembers each NCCL communicator's operation count, for collective_stalled.
	ops map[string]opsPoint
	// owners is what the per-owner evaluation keeps (owners.go).
	owners ownerVerdicts
}

type verdictKey struct{ verdict, device string }

// ratePoint is a stretch of time over which a port reported one rate.
type ratePoint struct {
	rate        float64
	first, last int64
}

func newNode(name string, limits nodestate.Limits) *node {
	return &node{
		Node:   nodestate.New(name, limits),
		streak: map[verdictKey]int{}, deviceHeld: map[verdictKey]bool{}, portPeaks: map[string][]ratePoint{},
		ops: map[string]opsPoint{},
	}
}

// rememberRate records a port's current rate and returns the highest it reported within memory
// (PromQL max_over_time(rate[memory])).
func (n *node) rememberRate(port string, rate float64, t, memory int64) float64 {
	pts := n.portPeaks[port]
	if k := len(pts) - 1; k >= 0 && pts[k].rate == rate {
		if t > pts[k].last {
			pts[k].last = t
		}
	} else {
		pts = append(pts, ratePoint{rate: rate, first: t, last: t})
	}
	// Stretches that ended before the memory window are forgotten.
	keep := pts[:0]
	for _, p := range pts {
		if p.last > t-memory {
			keep = append(keep, p)
		}
	}
	n.portPeaks[port] = keep
	peak := rate
	for _, p := range keep {
		peak = max(peak, p.rate)
	}
	return peak
}

package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/natorder"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// The straggler (README.md#straggler). A collective cannot complete before its last rank has
// arrived: the ranks that arrive first wait inside it, the last one does not. NCCL's Inspector
// times each rank's own collective, so the bus bandwidth it reports is the link's for the rank
// everyone waited for, and lower by the wait for every other rank: across the nodes of a
// communicator, the node whose bus bandwidth of a collective type stands far above the next
// node's is the one the others wait for. A slow link slows every rank of a ring alike and shows
// no straggler: its own verdicts (link_degraded, fabric_congestion) name it.

// straggle is what makes a node its communicator's straggler in a collective type: its bus
// bandwidth and the next node's.
type straggle struct {
	bus, nextBus float64
	next         string
}

// stragglerConditions sets, per NCCL collective type reported by at least two nodes (a
// communicator spanning nodes), straggler on the node whose large messages' bus bandwidth is at
// least straggler_min_bus_bandwidth_ratio times the next node's (which must be above 0), false on
// the others.
func stragglerConditions(t Thresholds, evals []evaluation) {
	type member struct {
		i   int
		bus float64
	}
	byOp := map[string][]member{}
	for i, ev := range evals {
		for _, c := range ev.v.Collectives {
			if c.WithinNode() {
				continue // as the rules, which record no bus bandwidth of it (collectiveRules)
			}
			for _, op := range c.Ops {
				if !math.IsNaN(op.BusBandwidth) {
					d := verdict.CollectiveDevice(c.Comm, op.Name)
					byOp[d] = append(byOp[d], member{i, op.BusBandwidth})
				}
			}
		}
	}
	for d, ms := range byOp {
		if len(ms) < 2 {
			continue // on one node: nobody to wait
		}
		sort.Slice(ms, func(a, b int) bool {
			if ms[a].bus != ms[b].bus {
				return ms[a].bus > ms[b].bus
			}
			return natorder.Compare(evals[ms[a].i].n.Name, evals[ms[b].i].n.Name) < 0
		})
		for _, m := range ms {
			evals[m.i].cond[verdictKey{verdict.Straggler, d}] = false
		}
		top, next := ms[0], ms[1]
		if next.bus > 0 && top.bus >= t.StragglerMinBusBandwidthRatio*next.bus {
			v := evals[top.i].v
			evals[top.i].cond[verdictKey{verdict.Straggler, d}] = true
			if v.stragglers == nil {
				v.stragglers = map[string]straggle{}
			}
			v.stragglers[d] = straggle{bus: top.bus, nextBus: next.bus, next: evals[next.i].n.Name}
		}
	}
	// A straggler whose communicator no longer spans nodes (its peers went stale) ends with a 0.
	for _, ev := range evals {
		for k, c := range ev.n.streak {
			if _, set := ev.cond[k]; !set && k.verdict == verdict.Straggler && (c > 0 || ev.n.deviceHeld[k]) {
				ev.cond[k] = false
			}
		}
	}
}

// stragglerSentence says why the node is its communicator's straggler and what to check.
func stragglerSentence(name, device string, v *nodeView) string {
	s, ok := v.stragglers[device]
	comm, op, _ := strings.Cut(device, "/")
	if !ok {
		return fmt.Sprintf("%s: the straggler of NCCL communicator %s in %s", name, comm, op)
	}
	return fmt.Sprintf("%s: the straggler of NCCL communicator %s: its %s ran at %s bus bandwidth, %.1f× the next node's (%s, %s): the other nodes' ranks wait in each %s for this node's to arrive; check its GPUs (clocks, power and thermal throttling, XIDs), its CPU and its data loading",
		name, comm, op, bps(s.bus), s.bus/s.nextBus, s.next, bps(s.nextBus), op)
}

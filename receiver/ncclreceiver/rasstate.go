package ncclreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/ncclreceiver"

import (
	"math"
	"sort"

	"go.uber.org/zap"
)

// rankID is one rank of one communicator.
type rankID struct {
	comm string
	rank int64
}

// rasCommSummary is what one STATUS says about one communicator.
type rasCommSummary struct {
	size   int64
	states map[string]int64           // rank.state -> ranks
	opsMin map[string]uint64          // collective -> lowest count among reporting ranks
	opsMax map[string]uint64          // collective -> highest count
	ranks  map[rankID]rasRankSnapshot // every rank, reporting or missing
}

type rasRankSnapshot struct {
	state string
	host  string
	pid   int64
}

// summarize folds one STATUS into per-communicator counts.
func summarize(st rasStatus) map[string]rasCommSummary {
	out := map[string]rasCommSummary{}
	for _, c := range st.Communicators {
		s := rasCommSummary{
			size: c.Size, states: map[string]int64{}, opsMin: map[string]uint64{}, opsMax: map[string]uint64{},
			ranks: map[rankID]rasRankSnapshot{},
		}
		if prev, ok := out[c.Hash]; ok { // one communicator split over several entries
			s = prev
		}
		for _, r := range c.Ranks {
			st := r.state()
			s.states[st]++
			s.ranks[rankID{c.Hash, r.Rank}] = rasRankSnapshot{state: st, host: r.Host, pid: r.PID}
			for op, n := range r.CollectiveCounts {
				lo, ok := s.opsMin[op]
				if !ok {
					lo = math.MaxUint64
				}
				s.opsMin[op] = min(lo, n)
				s.opsMax[op] = max(s.opsMax[op], n)
			}
		}
		for _, m := range c.MissingRanks {
			st := m.state()
			s.states[st]++
			s.ranks[rankID{c.Hash, m.Rank}] = rasRankSnapshot{state: st, host: m.Host, pid: m.PID}
		}
		out[c.Hash] = s
	}
	return out
}

// rankStates remembers each rank's last state so that a change is said once, when it happens.
type rankStates struct {
	last map[rankID]string
}

// rankChange is one rank's state change between two STATUS answers.
type rankChange struct {
	id       rankID
	from, to string
	host     string
	pid      int64
}

// observe returns the ranks whose state changed since the previous STATUS, in communicator and
// rank order (a rank seen for the first time counts only when it is not running: a job's ranks
// come up running), and remembers the states.
func (r *rankStates) observe(comms map[string]rasCommSummary) []rankChange {
	next := map[rankID]string{}
	var ids []rankID
	for _, c := range comms {
		for id := range c.ranks {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool {
		if ids[i].comm != ids[j].comm {
			return ids[i].comm < ids[j].comm
		}
		return ids[i].rank < ids[j].rank
	})
	var changes []rankChange
	for _, id := range ids {
		snap := comms[id.comm].ranks[id]
		next[id] = snap.state
		prev, seen := r.last[id]
		if (seen && prev == snap.state) || (!seen && snap.state == "running") {
			continue
		}
		if !seen {
			prev = "unknown"
		}
		changes = append(changes, rankChange{id: id, from: prev, to: snap.state, host: snap.host, pid: snap.pid})
	}
	r.last = next
	return changes
}

// healthy reports whether the state a rank changed to is a normal one (running, or finalized at
// the job's end): said at Info, the others at Warn.
func (c rankChange) healthy() bool { return c.to == "running" || c.to == "finalized" }

// logRankChanges says each change as one collector log line.
func logRankChanges(logger *zap.Logger, changes []rankChange) {
	for _, c := range changes {
		say := logger.Warn
		if c.healthy() {
			say = logger.Info
		}
		say("NCCL rank state changed",
			zap.String("nccl.comm.id", c.id.comm), zap.Int64("nccl.rank", c.id.rank),
			zap.String("from", c.from), zap.String("to", c.to),
			zap.String("host", c.host), zap.Int64("pid", c.pid))
	}
}

package nodestate // import "github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"

import (
	"sort"
)

// GroupKind is what makes nodes belong together: a batch job that owns devices on each of them,
// or an NCCL communicator with ranks on each.
type GroupKind string

const (
	GroupJob  GroupKind = "job"
	GroupComm GroupKind = "comm"
)

// Group is one set of nodes whose collectives run together, so that each waits on the slowest.
// A pod is on one node and groups nothing: pods of one training job belong together through
// their NCCL communicator.
type Group struct {
	Kind GroupKind
	// ID is the job's id (job.id) or the communicator's hash (nccl.comm.id), the same on every
	// node of the group.
	ID string
}

// Key is the group's label value: job:4711, comm:0x7f8c.
func (g Group) Key() string { return string(g.Kind) + ":" + g.ID }

// String is the group in words, for an operator's sentence.
func (g Group) String() string {
	if g.Kind == GroupComm {
		return "NCCL communicator " + g.ID
	}
	return "job " + g.ID
}

// Groups are the groups the node belongs to in this state: the jobs that own any of its devices
// (the owner receiver's interconnect.owner) and the NCCL communicators it reports (the nccl
// receiver), by key.
func (s *State) Groups() []Group {
	seen := map[Group]bool{}
	for _, o := range s.Owners {
		if o.Kind == OwnerJob && o.JobID != "" {
			seen[Group{GroupJob, o.JobID}] = true
		}
	}
	for _, c := range s.Collectives {
		if c.Comm != "" {
			seen[Group{GroupComm, c.Comm}] = true
		}
	}
	out := make([]Group, 0, len(seen))
	for g := range seen {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

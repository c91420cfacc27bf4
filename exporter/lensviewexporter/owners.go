package lensviewexporter // import "github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter"

import (
	"sort"
	"time"
)

// ownerGroup is the group an owner puts a node in: a batch job by its id (every node of a Slurm
// job reports the same SLURM_JOB_ID), a pod by its namespace: the owner receiver names the pod,
// and the pods of one training job have one name each, so the namespace is the nearest thing the
// series carry that the nodes of a Kubernetes job share. Empty for the node's own and shared
// owners.
func ownerGroup(kind, jobID, namespace string) string {
	switch {
	case kind == "job" && jobID != "":
		return "job " + jobID
	case kind == "pod" && namespace != "":
		return "namespace " + namespace
	}
	return ""
}

// groupOf is the group of most of the node's devices whose ownership holds now (ties by name),
// read from the owner receiver's interconnect.owner series in the node's state (the one decoding
// of them, internal/nodestate), and whether the node reports owners at all. An ownership holds
// while its point is 1 and no older than the view calls a series fresh (view.go, fresh).
func (s *store) groupOf(n *node, now time.Time) (group string, known bool) {
	lookback := time.Duration(max(3*s.resolution.Milliseconds(), 30_000)) * time.Millisecond
	owners, known := n.state.Owners(now.UnixNano(), lookback)
	count := map[string]int{}
	for _, o := range owners {
		if g := ownerGroup(o.Kind, o.JobID, o.Namespace); g != "" {
			count[g]++
		}
	}
	groups := make([]string, 0, len(count))
	for g := range count {
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool {
		if count[groups[i]] != count[groups[j]] {
			return count[groups[i]] > count[groups[j]]
		}
		return groups[i] < groups[j]
	})
	if len(groups) == 0 {
		return "", known
	}
	return groups[0], true
}

package owner

import "strings"

// Kind says what an Owner is.
type Kind string

const (
	// KindPod is a Kubernetes pod's container.
	KindPod Kind = "pod"
	// KindJob is a batch job (Slurm, or the job id of a GPU's processes).
	KindJob Kind = "job"
	// KindShared marks a device whose bytes several owners share, or whose owners disagree.
	KindShared Kind = "shared"
	// KindNode marks a component that belongs to the node as a whole (host memory).
	KindNode Kind = "node"
)

// Source names where an owner came from.
type Source string

const (
	SourceKubernetes Source = "kubernetes"
	SourceSlurm      Source = "slurm"
	SourceProcess    Source = "process"
	SourceStatic     Source = "static"
	// SourceRule is the owner of a component that follows from the rules (shared, node, the
	// single owner of the GPUs below a root port).
	SourceRule Source = "rule"
)

// Owner is who a device's bytes belong to. The zero value is "not known".
type Owner struct {
	Kind      Kind
	Source    Source
	Namespace string // k8s.namespace.name
	Pod       string // k8s.pod.name
	Container string // k8s.container.name
	JobID     string // the batch job id
	User      string // the job's user, where the source says it
	Partition string // the job's partition, where the source says it
}

// Known reports whether o names an owner (or is shared / node).
func (o Owner) Known() bool { return o.Kind != "" }

// Shared returns the owner of a device several owners use.
func Shared() Owner { return Owner{Kind: KindShared, Source: SourceRule} }

// Node returns the owner of a component of the node as a whole.
func Node() Owner { return Owner{Kind: KindNode, Source: SourceRule} }

// Same reports whether a and b are the same owner, wherever each came from: a pod is the same pod
// (its container ignored, the bytes of a pod's two containers on one NIC are the pod's), a job the
// same job id.
func (o Owner) Same(b Owner) bool {
	if o.Kind != b.Kind {
		return false
	}
	switch o.Kind {
	case KindPod:
		return o.Namespace == b.Namespace && o.Pod == b.Pod
	case KindJob:
		return o.JobID == b.JobID
	}
	return true
}

// String is the owner in words, for log lines.
func (o Owner) String() string {
	switch o.Kind {
	case KindPod:
		return "pod " + o.Namespace + "/" + o.Pod + "/" + o.Container
	case KindJob:
		return "job " + o.JobID
	case "":
		return "unknown"
	}
	return string(o.Kind)
}

// one returns the single owner of owners: the owner when all are the same (a pod's containers
// collapse to the pod, their container name dropped when they differ), shared when they are not,
// and the zero Owner for none.
func one(owners []Owner) Owner {
	if len(owners) == 0 {
		return Owner{}
	}
	first := owners[0]
	for _, o := range owners[1:] {
		if !first.Same(o) {
			return Shared()
		}
		if first.Container != o.Container {
			first.Container = ""
		}
		first.User = firstNonEmpty(first.User, o.User)
		first.Partition = firstNonEmpty(first.Partition, o.Partition)
	}
	return first
}

func firstNonEmpty(a, b string) string {
	if strings.TrimSpace(a) != "" {
		return a
	}
	return b
}

package ownerreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/ownerreceiver"

import (
	"sort"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-iclens/otelcol-iclens/internal/owner"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/ownerreceiver/internal/metadata"
)

// resourceKey is an owner as a resource names it: a pod by namespace and name (its containers
// are the pod's, as owner.Owner.Same has it), a job by its id; the zero key is the receiver's own
// resource (shared and node-owned devices).
type resourceKey struct{ namespace, pod, job string }

func resourceOf(o owner.Owner) resourceKey {
	switch o.Kind {
	case owner.KindPod:
		return resourceKey{namespace: o.Namespace, pod: o.Pod}
	case owner.KindJob:
		return resourceKey{job: o.JobID}
	}
	return resourceKey{}
}

// emitPerOwner emits the points with owner_resource: one resource per pod or job with the points
// of its devices (the ended ownerships' 0 under the owner that held them), the shared and node
// devices on the receiver's own resource. The points keep their owner attributes, so a query
// needs no resource join either way.
//
// Why here and not in a processor: the owner receiver is the one component that knows the owners;
// grouping its own points needs no state in the pipeline and leaves interconnect.io and every
// other receiver untouched (no series multiplied, nothing re-keyed), where a processor moving
// interconnect.io under owner resources would have to hold the owners of every node it sees.
func (s *ownerScraper) emitPerOwner(now pcommon.Timestamp, held, ended []owner.Assignment) pmetric.Metrics {
	type point struct {
		a owner.Assignment
		v int64
	}
	groups := map[resourceKey][]point{}
	for _, a := range held {
		groups[resourceOf(a.Owner)] = append(groups[resourceOf(a.Owner)], point{a, 1})
	}
	for _, a := range ended {
		groups[resourceOf(a.Owner)] = append(groups[resourceOf(a.Owner)], point{a, 0})
	}
	keys := make([]resourceKey, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.namespace != b.namespace {
			return a.namespace < b.namespace
		}
		if a.pod != b.pod {
			return a.pod < b.pod
		}
		return a.job < b.job
	})
	for _, k := range keys {
		for _, p := range groups[k] {
			s.record(now, p.a, p.v)
		}
		rb := metadata.NewResourceBuilder(s.cfg.ResourceAttributes)
		switch {
		case k.pod != "":
			rb.SetK8sNamespaceName(k.namespace)
			rb.SetK8sPodName(k.pod)
		case k.job != "":
			rb.SetJobID(k.job)
		}
		s.mb.EmitForResource(metadata.WithResource(rb.Emit()))
	}
	return s.mb.Emit()
}

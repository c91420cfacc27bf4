package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"

import (
	"sort"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector/internal/metadata"
	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// ownerVerdicts is what the per-owner evaluation keeps of a node between evaluations.
type ownerVerdicts struct {
	// devices: the owner of each device a verdict may name (port, NIC, GPU by name and address),
	// as the latest evaluation read it.
	devices map[string]nodestate.OwnerID
	// streak counts the consecutive evaluations an owner's node-level condition held.
	streak map[ownerKey]int
	// held is each owner's last node-level verdict that held: what its logs reported last.
	held map[nodestate.OwnerID]string
}

type ownerKey struct {
	verdict string
	owner   nodestate.OwnerID
}

// held counts one more evaluation of a condition (its streak, 0 when it does not hold) and reports
// whether it has held hold evaluations in a row: the node's and the owners' verdicts are raised by
// the same rule.
func held[K comparable](streak map[K]int, k K, cond bool, hold int) bool {
	if cond {
		streak[k]++
	} else {
		streak[k] = 0
	}
	return streak[k] >= hold
}

// recordVerdict records a verdict point: a device verdict carries its device's owner, a node-level
// one the owner it was evaluated for (the zero OwnerID: the node's own).
func (e *engine) recordVerdict(n *node, ts pcommon.Timestamp, val int64, k verdictKey, o nodestate.OwnerID) {
	if k.device != "" {
		o = n.owners.devices[k.device]
	}
	e.mb.RecordDiagnosisVerdictDataPoint(ts, val, metadata.MapAttributeVerdict[k.verdict], k.device, o.Kind, o.JobID, o.Namespace, o.Pod)
}

// recordEvidence records an evidence point, with the owner as recordVerdict gives it.
func (e *engine) recordEvidence(n *node, ts pcommon.Timestamp, x float64, k verdictKey, o nodestate.OwnerID) {
	if k.device != "" {
		o = n.owners.devices[k.device]
	}
	e.mb.RecordDiagnosisEvidenceDataPoint(ts, x, metadata.MapAttributeRatio[k.verdict], k.device, o.Kind, o.JobID, o.Namespace, o.Pod)
}

// deviceOwners maps the devices a verdict names to their pod or job: a GPU by the gpu receiver's
// name and by its address, a NIC by its RDMA device, a port by its NIC's owner (the owner receiver
// keys a NIC by its PCI function, which carries every port of it).
func deviceOwners(st *nodestate.State) map[string]nodestate.OwnerID {
	out := map[string]nodestate.OwnerID{}
	for id, o := range st.Owners {
		if id.Component == nodestate.RNIC && o.Owns() {
			out[o.Device] = o.OwnerID
		}
	}
	for _, g := range st.GPUs {
		if o := st.OwnerOf(nodestate.GPUPCIe, g.Bus).OwnerID; o.Owns() {
			out[g.Name], out[g.Bus] = o, o
		}
	}
	for _, p := range st.Ports {
		nic, _, _ := strings.Cut(p.Device, "/")
		if o, ok := out[nic]; ok {
			out[p.Device] = o
		}
	}
	return out
}

// evaluateOwners evaluates each pod's or job's traffic on its own, with per_owner: the node-level
// verdicts (healthy, fallback, bounce, congestion, idle) over the bytes of its own GPUs, NICs and
// root ports (nodestate.State.ByOwner), against the line rate of its own ports, so that one job
// bouncing through host memory is told from its healthy neighbour on the same node. Host memory
// is the node's (nothing in its counters says whose): an owner's memory ratios are the node's
// memory per its own network byte, which only the bounce and fallback verdicts read, beside the
// owner's own root-port writes. It records the owners' verdict and evidence points and appends a
// log record per owner verdict change; it returns how many.
func (e *engine) evaluateOwners(ld plog.Logs, n *node, v *nodeView, ts pcommon.Timestamp) int {
	if !e.cfg.PerOwner {
		return 0
	}
	ov := &n.owners
	if ov.streak == nil {
		ov.streak, ov.held = map[ownerKey]int{}, map[nodestate.OwnerID]string{}
	}
	ov.devices = deviceOwners(v.State)
	now := int64(ts)
	seen := map[ownerKey]bool{}
	views := map[nodestate.OwnerID]*nodeView{}
	holds := map[nodestate.OwnerID]string{}
	ids := v.OwnerIDs()
	for _, id := range ids {
		w := n.viewOf(e.cfg, v.ByOwner[id], now)
		w.memory = v.memory
		w.unwatched = w.unwatchedSockets(e.cfg.Thresholds)
		views[id] = w
		cond := conditions(e.cfg.Thresholds, w)
		for _, nv := range verdict.NodeVerdicts() {
			c, evaluated := cond[verdictKey{nv, ""}]
			if !evaluated || !e.cfg.enabled(nv) {
				continue
			}
			k := ownerKey{nv, id}
			seen[k] = true
			val := int64(0)
			if held(ov.streak, k, c, e.cfg.Hold) {
				val = 1
				if holds[id] == "" {
					holds[id] = nv
				}
			}
			e.recordVerdict(n, ts, val, verdictKey{nv, ""}, id)
		}
		for k, x := range evidence(e.cfg.Thresholds, w) {
			if k.device == "" {
				e.recordEvidence(n, ts, x, k, id)
			}
		}
	}
	for k := range ov.streak {
		if !seen[k] {
			delete(ov.streak, k)
		}
	}
	var changed []nodestate.OwnerID
	for _, id := range ids {
		if h := holds[id]; h != "" && h != ov.held[id] {
			changed = append(changed, id)
		}
	}
	recs := make([]ownerRecord, 0, len(changed))
	for _, id := range changed {
		recs = append(recs, ownerRecord{owner: id, verdict: holds[id], previous: ov.held[id],
			body: ownerSentence(n, id, views[id], holds), evidence: evidence(e.cfg.Thresholds, views[id])})
		ov.held[id] = holds[id]
	}
	for id := range ov.held {
		if _, ok := views[id]; !ok {
			delete(ov.held, id) // the owner left the node: its next job starts afresh
		}
	}
	appendOwnerRecords(ld, n, recs, ts)
	return len(recs)
}

type ownerRecord struct {
	owner                   nodestate.OwnerID
	verdict, previous, body string
	evidence                map[verdictKey]float64
}

// ownerSentence is the node's sentence for the owner's verdict, said of the owner, with what the
// node's other owners' traffic is: "node1: job 4711: GPUDirect RDMA bounces through host memory:
// ...; on the same node job 4712: healthy gpudirect".
func ownerSentence(n *node, id nodestate.OwnerID, v *nodeView, holds map[nodestate.OwnerID]string) string {
	name := nodeName(n)
	s := name + ": " + id.String() + ": " + strings.TrimPrefix(sentence(holds[id], "", n, v), name+": ")
	others := make([]string, 0, len(holds))
	for o, h := range holds {
		if o != id {
			others = append(others, o.String()+": "+strings.ReplaceAll(h, "_", " "))
		}
	}
	sort.Strings(others)
	if len(others) > 0 {
		s += "; on the same node " + strings.Join(others, ", ")
	}
	return s
}

func appendOwnerRecords(ld plog.Logs, n *node, recs []ownerRecord, ts pcommon.Timestamp) {
	if len(recs) == 0 {
		return
	}
	sl := nodeScopeLogs(ld, n)
	for _, r := range recs {
		a := appendRecord(sl, logRecord{verdict: r.verdict, previous: r.previous, body: r.body}, ts).Attributes()
		a.PutStr(verdict.AttrOwnerKind, r.owner.Kind)
		a.PutStr(verdict.AttrJobID, r.owner.JobID)
		a.PutStr(verdict.AttrK8sNamespace, r.owner.Namespace)
		a.PutStr(verdict.AttrK8sPod, r.owner.Pod)
		for k, x := range r.evidence {
			if k.device == "" {
				a.PutDouble(k.verdict, x)
			}
		}
	}
}

package lensviewexporter // import "github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter"

import (
	"sort"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
)

// What the diagnosis connector emits is the contract of internal/verdict, per node resource
// (host.name): the verdict and evidence gauges, and one log record per verdict change, body the
// operator's sentence, attributes verdict, previous_verdict, device and one per evidence ratio.

// diagnosis is a node's latest verdicts, their evidence, the sentences of the changes and the
// node-level verdict's history. Verdicts, evidence and sentences are kept by owner and device:
// with the connector's per_owner, each pod or job has node-level verdicts of its own (device ""),
// beside the node's (the zero owner), and a device verdict carries its device's owner.
type diagnosis struct {
	verdicts  map[diagKey]verdictFact // verdict holding now
	evidence  map[diagKey]map[string]evidenceFact
	sentences map[diagKey]sentence // sentence of the last change
	log       []sentence           // the last changes, newest last (at most maxLog)
	history   *ring                // the node's own node-level verdict: t, verdict code (store.verdictIndex)
}

// diagKey is whose verdict it is: an owner (zero: the node's own, or a device nobody owns) and a
// device ("" for a node-level verdict).
type diagKey struct {
	owner  nodestate.OwnerID
	device string
}

type verdictFact struct {
	verdict string
	t       int64
}

type evidenceFact struct {
	v float64
	t int64
}

type sentence struct {
	t        int64
	verdict  string
	previous string
	key      diagKey
	body     string
	evidence map[string]float64
}

const maxLog = 32

func (d *diagnosis) init(points int) {
	d.verdicts = map[diagKey]verdictFact{}
	d.evidence = map[diagKey]map[string]evidenceFact{}
	d.sentences = map[diagKey]sentence{}
	d.history = newRing(points)
}

func (d *diagnosis) setVerdict(k diagKey, verdict string, t int64) {
	if cur, ok := d.verdicts[k]; ok && cur.t > t {
		return
	}
	d.verdicts[k] = verdictFact{verdict: verdict, t: t}
}

// clearVerdict forgets the verdict when the connector reports it 0 at or after the time it held.
// A device's verdict ends under every owner: the 0 of a device whose job just ended carries the
// device's new owner (or none), not the one its verdict was raised under.
func (d *diagnosis) clearVerdict(k diagKey, verdict string, t int64) {
	for held, cur := range d.verdicts {
		if (held == k || k.device != "" && held.device == k.device) && cur.verdict == verdict && cur.t <= t {
			delete(d.verdicts, held)
		}
	}
}

// deviceOwners is the owner of each device that has a verdict holding now, as the connector's
// verdict points carry it (a device's log records name no owner).
func (d *diagnosis) deviceOwners() map[string]nodestate.OwnerID {
	out := map[string]nodestate.OwnerID{}
	for k := range d.verdicts {
		if k.device != "" && k.owner.Owns() {
			out[k.device] = k.owner
		}
	}
	return out
}

func (d *diagnosis) setEvidence(k diagKey, ratio string, v float64, t int64) {
	m := d.evidence[k]
	if m == nil {
		m = map[string]evidenceFact{}
		d.evidence[k] = m
	}
	if cur, ok := m[ratio]; ok && cur.t > t {
		return
	}
	m[ratio] = evidenceFact{v: v, t: t}
}

func (d *diagnosis) addSentence(s sentence) {
	if cur, ok := d.sentences[s.key]; !ok || cur.t <= s.t {
		d.sentences[s.key] = s
	}
	d.log = append(d.log, s)
	if len(d.log) > maxLog {
		d.log = append(d.log[:0], d.log[len(d.log)-maxLog:]...)
	}
}

func (d *diagnosis) forget(oldest int64) {
	for k, v := range d.verdicts {
		if v.t < oldest {
			delete(d.verdicts, k)
		}
	}
	for dev, m := range d.evidence {
		for k, e := range m {
			if e.t < oldest {
				delete(m, k)
			}
		}
		if len(m) == 0 {
			delete(d.evidence, dev)
		}
	}
	for k, s := range d.sentences {
		if s.t < oldest {
			delete(d.sentences, k)
		}
	}
}

// diagnosisJSON is the banner and the history strip of the API.
type diagnosisJSON struct {
	// Present is false when no diagnosis.verdict reached the view for this node (no diagnosis
	// connector in the pipeline).
	Present bool `json:"present"`
	// Owner is whose node-level verdict this is (ownerRef): "" for the node's own, a pod or job
	// where the view is filtered by owner.
	Owner   string `json:"owner,omitempty"`
	Verdict string `json:"verdict"`
	Since   int64  `json:"since,omitempty"`
	// At is when the connector last reported the node's verdict (unix ms): the page says so when
	// it is not recent (the connector stopped, the pipeline stalled).
	At       int64              `json:"at,omitempty"`
	Sentence string             `json:"sentence,omitempty"`
	Evidence map[string]float64 `json:"evidence"`
	Devices  []deviceVerdict    `json:"devices"`
	History  []verdictSpan      `json:"history"`
	Log      []logEntry         `json:"log"`
}

// deviceVerdict is a device-level verdict (a port trained down, a GPU-NIC pair not ready).
type deviceVerdict struct {
	Device string `json:"device"`
	// Owner is the device's pod or job (ownerRef), "" where nobody owns it.
	Owner    string             `json:"owner,omitempty"`
	Verdict  string             `json:"verdict"`
	Sentence string             `json:"sentence,omitempty"`
	Evidence map[string]float64 `json:"evidence,omitempty"`
}

// verdictSpan is one stretch of the history strip: the verdict from From to To (unix ms).
type verdictSpan struct {
	From    int64  `json:"from"`
	To      int64  `json:"to"`
	Verdict string `json:"verdict"`
}

// logEntry is one verdict change as the connector logged it.
type logEntry struct {
	Time   int64  `json:"t"`
	Device string `json:"device"`
	// Owner is the pod or job a node-level change is about (ownerRef), "" for the node's own.
	Owner    string `json:"owner,omitempty"`
	Verdict  string `json:"verdict"`
	Previous string `json:"previous_verdict"`
	Sentence string `json:"sentence"`
	// Evidence are the ratios the connector decided the change on.
	Evidence map[string]float64 `json:"evidence,omitempty"`
}

// export is the diagnosis the page shows: the node's, or with f one owner's (its node-level
// verdict, its devices' verdicts and its changes). The history strip is the node's own in both.
func (d *diagnosis) export(names []string, oldest int64, f *ownerFilter) diagnosisJSON {
	out := diagnosisJSON{Evidence: map[string]float64{}, Devices: []deviceVerdict{}, History: []verdictSpan{}, Log: []logEntry{}}
	// A verdict's evidence is its newest evaluation's: a ratio the connector stopped writing (its
	// denominator went to zero) is not shown beside the ones it wrote since.
	evidence := func(k diagKey) map[string]float64 {
		var newest int64
		for _, e := range d.evidence[k] {
			newest = max(newest, e.t)
		}
		m := map[string]float64{}
		for r, e := range d.evidence[k] {
			if e.t == newest {
				m[r] = e.v
			}
		}
		return m
	}
	// Any verdict, the node's, an owner's or a device's, says a connector is in the pipeline.
	out.Present = len(d.verdicts) > 0
	node := diagKey{owner: f.owner()}
	out.Owner = ownerRef(node.owner)
	if v, ok := d.verdicts[node]; ok {
		out.Verdict = v.verdict
		out.At = v.t
		out.Evidence = evidence(node)
		if s, ok := d.sentences[node]; ok && s.verdict == v.verdict {
			out.Sentence = s.body
			out.Since = s.t
		}
	}
	owners := d.deviceOwners()
	for k, v := range d.verdicts {
		if k.device == "" || !f.keepsDeviceVerdict(k, owners) {
			continue
		}
		dv := deviceVerdict{Device: k.device, Owner: ownerRef(k.owner), Verdict: v.verdict, Evidence: evidence(k)}
		// The connector's device log records carry no owner: their sentence is under the zero one.
		s, ok := d.sentences[k]
		if !ok {
			s, ok = d.sentences[diagKey{device: k.device}]
		}
		if ok && s.verdict == v.verdict {
			dv.Sentence = s.body
		}
		out.Devices = append(out.Devices, dv)
	}
	sort.Slice(out.Devices, func(i, j int) bool { return out.Devices[i].Device < out.Devices[j].Device })
	// The history ring holds one point per step; the strip gets one span per run of a verdict.
	d.history.since(oldest, func(t int64, v float64) {
		code := int(v)
		if code < 0 || code >= len(names) {
			return
		}
		if n := len(out.History); n > 0 && out.History[n-1].Verdict == names[code] {
			out.History[n-1].To = t
			return
		}
		if n := len(out.History); n > 0 {
			out.History[n-1].To = t
		}
		out.History = append(out.History, verdictSpan{From: t, To: t, Verdict: names[code]})
	})
	for _, s := range d.log {
		if s.t < oldest || !f.keepsChange(s.key, owners) {
			continue
		}
		out.Log = append(out.Log, logEntry{Time: s.t, Device: s.key.device, Owner: ownerRef(s.key.owner), Verdict: s.verdict,
			Previous: s.previous, Sentence: s.body, Evidence: s.evidence})
	}
	return out
}

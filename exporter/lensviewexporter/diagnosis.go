package lensviewexporter // import "github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter"

import (
	"sort"
)

// What the diagnosis connector emits is the contract of internal/verdict, per node resource
// (host.name): the verdict and evidence gauges, and one log record per verdict change, body the
// operator's sentence, attributes verdict, previous_verdict, device and one per evidence ratio.

// diagnosis is a node's latest verdicts, their evidence, the sentences of the changes and the
// node-level verdict's history.
type diagnosis struct {
	verdicts  map[string]verdictFact // device -> verdict holding now
	evidence  map[string]map[string]evidenceFact
	sentences map[string]sentence // device -> sentence of the last change
	log       []sentence          // the last changes, newest last (at most maxLog)
	history   *ring               // node level: t, verdict code (store.verdictIndex)
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
	device   string
	body     string
	evidence map[string]float64
}

const maxLog = 32

func (d *diagnosis) init(points int) {
	d.verdicts = map[string]verdictFact{}
	d.evidence = map[string]map[string]evidenceFact{}
	d.sentences = map[string]sentence{}
	d.history = newRing(points)
}

func (d *diagnosis) setVerdict(device, verdict string, t int64) {
	if cur, ok := d.verdicts[device]; ok && cur.t > t {
		return
	}
	d.verdicts[device] = verdictFact{verdict: verdict, t: t}
}

// clearVerdict forgets the device's verdict when the connector reports it 0 at or after the
// time it held.
func (d *diagnosis) clearVerdict(device, verdict string, t int64) {
	if cur, ok := d.verdicts[device]; ok && cur.verdict == verdict && cur.t <= t {
		delete(d.verdicts, device)
	}
}

func (d *diagnosis) setEvidence(device, ratio string, v float64, t int64) {
	m := d.evidence[device]
	if m == nil {
		m = map[string]evidenceFact{}
		d.evidence[device] = m
	}
	if cur, ok := m[ratio]; ok && cur.t > t {
		return
	}
	m[ratio] = evidenceFact{v: v, t: t}
}

func (d *diagnosis) addSentence(s sentence) {
	if cur, ok := d.sentences[s.device]; !ok || cur.t <= s.t {
		d.sentences[s.device] = s
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
	Present bool   `json:"present"`
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
	Device   string             `json:"device"`
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
	Time     int64  `json:"t"`
	Device   string `json:"device"`
	Verdict  string `json:"verdict"`
	Previous string `json:"previous_verdict"`
	Sentence string `json:"sentence"`
	// Evidence are the ratios the connector decided the change on.
	Evidence map[string]float64 `json:"evidence,omitempty"`
}

func (d *diagnosis) export(names []string, oldest int64) diagnosisJSON {
	out := diagnosisJSON{Evidence: map[string]float64{}, Devices: []deviceVerdict{}, History: []verdictSpan{}, Log: []logEntry{}}
	// A device's evidence is its newest evaluation's: a ratio the connector stopped writing (its
	// denominator went to zero) is not shown beside the ones it wrote since.
	evidence := func(dev string) map[string]float64 {
		var newest int64
		for _, e := range d.evidence[dev] {
			newest = max(newest, e.t)
		}
		m := map[string]float64{}
		for k, e := range d.evidence[dev] {
			if e.t == newest {
				m[k] = e.v
			}
		}
		return m
	}
	if v, ok := d.verdicts[""]; ok {
		out.Present = true
		out.Verdict = v.verdict
		out.At = v.t
		out.Evidence = evidence("")
		if s, ok := d.sentences[""]; ok && s.verdict == v.verdict {
			out.Sentence = s.body
			out.Since = s.t
		}
	}
	for dev, v := range d.verdicts {
		if dev == "" {
			continue
		}
		out.Present = true
		dv := deviceVerdict{Device: dev, Verdict: v.verdict, Evidence: evidence(dev)}
		if s, ok := d.sentences[dev]; ok && s.verdict == v.verdict {
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
		if s.t >= oldest {
			out.Log = append(out.Log, logEntry{Time: s.t, Device: s.device, Verdict: s.verdict, Previous: s.previous, Sentence: s.body, Evidence: s.evidence})
		}
	}
	return out
}

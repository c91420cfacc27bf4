package scenario

import (
	"fmt"
	"slices"
	"strings"
)

// Judgement is how a diagnosis did on one node of a case: per phase, how many collection
// intervals after the phase's traffic began its verdicts were all raised (the traffic of sample i
// flows during the interval that ends at sample i, so a verdict raised at a phase's first sample
// took 1 interval), how many until the previous phase's own verdicts cleared, and every verdict
// that held where it should not.
type Judgement struct {
	Phases []PhaseJudgement
	// Wrong lists "sample N: verdict" for every verdict that held outside the phase's
	// expectations (a phase's first Grace samples may still hold the previous phase's).
	Wrong []string
	// Skewed counts the verdicts outside the expectations that held while the node's receivers
	// disagreed about the phase (JudgeSkewed): not counted as wrong.
	Skewed int
	// StartLimit is the most intervals the first phase's verdicts may take from the start of
	// the recording (Grace+1 unless the caller knows its receivers start slower).
	StartLimit int
}

// PhaseJudgement is one phase of a Judgement; -1 where it never happened.
type PhaseJudgement struct {
	From            int
	Expect          []string
	RaisedAfter     int
	ClearedAfter    int
	PreviousOnlyLen int // how many verdicts of the previous phase had to clear
	ClearLimit      int // the most intervals they may take (Phase.ClearWithin, at least Grace)
	// Slack is how many intervals more the phase's verdicts may take because the node's
	// receivers switched to it more than a sample apart (JudgeSkewed's lead): a real node's
	// receivers scrape within one interval of each other, which hold absorbs; a replay started on
	// a loaded machine can put them several apart, and an evaluation that reads one receiver's new
	// phase beside another's old restarts the hold once more.
	Slack int
}

// Grace is how many samples into a phase a diagnosis may still show the previous phase's
// verdicts, and the most intervals a verdict may take (from the start of the recording: one more,
// as a rate needs two samples).
const Grace = 2

// Judge compares got (the verdicts holding at each sample, as Expect names them) with node n's
// expectations.
func (c Case) Judge(n int, got [][]string) Judgement { return c.JudgeSkewed(n, got, nil, nil) }

// JudgeSkewed is Judge where the receivers of a replay do not switch phase at the same sample:
// lead[p] samples before phase p's first sample (on the clock of the receiver that switches
// last) some receivers already replay phase p, and whatever held then is counted as Skewed, not
// Wrong; so is whatever held at the samples in exempt (where a replaying receiver scraped late and
// then early, attributing a recorded interval's bytes to a shorter or longer one).
func (c Case) JudgeSkewed(n int, got [][]string, lead []int, exempt map[int]bool) Judgement {
	j := Judgement{StartLimit: Grace + 1}
	for p, ph := range c.Phases {
		to := len(got)
		if p+1 < len(c.Phases) {
			to = min(to, c.Phases[p+1].From)
		}
		grace := Grace
		if p == 0 {
			grace++
		}
		clearGrace := max(grace, ph.ClearWithin)
		pj := PhaseJudgement{From: ph.From, Expect: ph.Expect[n], RaisedAfter: -1, ClearedAfter: -1, ClearLimit: max(Grace, ph.ClearWithin)}
		if p < len(lead) && lead[p] > 1 {
			pj.Slack = 1
		}
		var prev []string
		if p > 0 {
			for _, v := range c.Phases[p-1].Expect[n] {
				if !slices.Contains(ph.Expect[n], v) {
					prev = append(prev, v)
				}
			}
		}
		pj.PreviousOnlyLen = len(prev)
		for i := ph.From; i < to; i++ {
			if pj.RaisedAfter < 0 && containsAll(got[i], ph.Expect[n]) {
				pj.RaisedAfter = i - ph.From + 1
			}
			if pj.ClearedAfter < 0 && !containsAny(got[i], prev) {
				pj.ClearedAfter = i - ph.From + 1
			}
			for _, v := range got[i] {
				if slices.Contains(ph.Expect[n], v) {
					continue
				}
				if i < ph.From+clearGrace && p > 0 && slices.Contains(c.Phases[p-1].Expect[n], v) {
					continue
				}
				if exempt[i] || p+1 < len(c.Phases) && p+1 < len(lead) && i >= c.Phases[p+1].From-lead[p+1] {
					j.Skewed++
					continue
				}
				j.Wrong = append(j.Wrong, fmt.Sprintf("sample %d: %s", i, v))
			}
		}
		j.Phases = append(j.Phases, pj)
	}
	return j
}

// Failures lists what the judgement finds wrong: a verdict raised late or never, a previous
// phase's verdict cleared late, and the wrong verdicts. A phase shorter than what it may take is
// only checked for wrong verdicts.
func (j Judgement) Failures(samples int) []string {
	out := append([]string(nil), j.Wrong...)
	for p, pj := range j.Phases {
		limit := Grace
		if p == 0 {
			limit = j.StartLimit
		}
		end := samples
		if p+1 < len(j.Phases) {
			end = j.Phases[p+1].From
		}
		if end-pj.From <= limit {
			continue
		}
		limit += pj.Slack
		if pj.RaisedAfter < 0 || pj.RaisedAfter > limit {
			out = append(out, fmt.Sprintf("phase from sample %d: %s raised after %d intervals (at most %d)", pj.From, strings.Join(pj.Expect, ", "), pj.RaisedAfter, limit))
		}
		if clear := max(limit, pj.ClearLimit); pj.PreviousOnlyLen > 0 && (pj.ClearedAfter < 0 || pj.ClearedAfter > clear) {
			out = append(out, fmt.Sprintf("phase from sample %d: the previous phase's verdicts cleared after %d intervals (at most %d)", pj.From, pj.ClearedAfter, clear))
		}
	}
	return out
}

// String summarizes the judgement for a report: "from 60: tcp_fallback in 2, cleared in 1".
func (j Judgement) String() string {
	var parts []string
	for _, pj := range j.Phases {
		s := fmt.Sprintf("from %d: [%s] in %d", pj.From, strings.Join(pj.Expect, " "), pj.RaisedAfter)
		if pj.PreviousOnlyLen > 0 {
			s += fmt.Sprintf(", previous cleared in %d", pj.ClearedAfter)
		}
		parts = append(parts, s)
	}
	s := strings.Join(parts, "; ")
	if len(j.Wrong) > 0 {
		s += fmt.Sprintf("; %d wrong", len(j.Wrong))
	} else {
		s += "; no false verdict"
	}
	if j.Skewed > 0 {
		s += fmt.Sprintf(" (%d other while the receivers were out of step)", j.Skewed)
	}
	return s
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

func containsAny(have, want []string) bool {
	for _, w := range want {
		if slices.Contains(have, w) {
			return true
		}
	}
	return false
}

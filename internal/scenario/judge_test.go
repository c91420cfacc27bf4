package scenario

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func transitionCase() Case {
	for _, c := range Cases() {
		if c.Name == "transition_tcp_fallback" {
			return c
		}
	}
	panic("no transition_tcp_fallback")
}

// verdicts builds what a diagnosis said per sample: healthy, then tcp from sample `from`, healthy
// again from `back`.
func verdicts(n, from, back int) [][]string {
	got := make([][]string, n)
	for i := range got {
		switch {
		case i < 2:
		case i >= from && i < back:
			got[i] = []string{TCPFallback}
		default:
			got[i] = []string{HealthyGPUDirect}
		}
	}
	return got
}

func TestJudgeOnTime(t *testing.T) {
	c := transitionCase()
	j := c.Judge(0, verdicts(TransitionSamples, TransitionFault+1, TransitionClear+1))
	assert.Empty(t, j.Failures(TransitionSamples), "%s", j)
	assert.Equal(t, 2, j.Phases[1].RaisedAfter)
	assert.Equal(t, 2, j.Phases[2].ClearedAfter)
}

func TestJudgeLateAndWrong(t *testing.T) {
	c := transitionCase()
	got := verdicts(TransitionSamples, TransitionFault+3, TransitionClear+1)
	got[30] = []string{HealthyGPUDirect, GPUDirectBounce}
	j := c.Judge(0, got)
	assert.Equal(t, []string{
		"sample 30: gpudirect_bounce",
		"sample 62: healthy_gpudirect", // still healthy after the grace
		"phase from sample 60: tcp_fallback raised after 4 intervals (at most 2)",
		"phase from sample 60: the previous phase's verdicts cleared after 4 intervals (at most 2)",
	}, j.Failures(TransitionSamples))
}

func TestJudgeSkewed(t *testing.T) {
	c := transitionCase()
	got := verdicts(TransitionSamples, TransitionFault+1, TransitionClear+1)
	got[98] = []string{GPUDirectBounce} // receivers out of step just before the change back
	assert.NotEmpty(t, c.Judge(0, got).Wrong)
	j := c.JudgeSkewed(0, got, []int{0, 0, 3}, nil)
	assert.Empty(t, j.Failures(TransitionSamples))
	assert.Equal(t, 1, j.Skewed)

	got[30] = []string{GPUDirectBounce}
	assert.NotEmpty(t, c.JudgeSkewed(0, got, []int{0, 0, 3}, nil).Wrong)
	assert.Empty(t, c.JudgeSkewed(0, got, []int{0, 0, 3}, map[int]bool{30: true}).Wrong)
}

// TestJudgeSlackForReceiversApart: a phase raised one interval late passes only where the node's
// receivers switched to it more than a sample apart (lead above 1), and only by one.
func TestJudgeSlackForReceiversApart(t *testing.T) {
	c := transitionCase()
	late := verdicts(TransitionSamples, TransitionFault+2, TransitionClear+2) // raised after 3
	assert.NotEmpty(t, c.JudgeSkewed(0, late, []int{0, 1, 1}, nil).Failures(TransitionSamples), "receivers a sample apart: hold absorbs that")
	assert.Empty(t, c.JudgeSkewed(0, late, []int{0, 2, 3}, nil).Failures(TransitionSamples), "receivers 2-3 samples apart: one interval more")
	later := verdicts(TransitionSamples, TransitionFault+3, TransitionClear+3) // raised after 4
	assert.NotEmpty(t, c.JudgeSkewed(0, later, []int{0, 2, 3}, nil).Failures(TransitionSamples), "but not two")
}

package scenario

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAllReduceVolume(t *testing.T) {
	// 2(N-1)/N x 4P with N=2: each GPU moves 4P bytes per step.
	assert.InDelta(t, 4*Params, AllReduceBytes(), 1)
	assert.InDelta(t, 2.4646e9, CongestedRate, 1e5)
	assert.InDelta(t, 2.47e9, CongestedRate, 0.02*2.47e9, "the paper's 2.47 GB/s within 2 %")
}

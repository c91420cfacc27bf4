package lensviewexporter

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/metadata"
)

// TestEveryComponentHasAName checks that the node chart has a label of its own and a place in the
// legend for every component value of the shared vocabulary, so that a component a receiver adds
// (gpu_xgmi for AMD Instinct) is not drawn under the generic fallback name.
func TestEveryComponentHasAName(t *testing.T) {
	v, err := metadata.Load()
	require.NoError(t, err)
	components := v.Attributes["component"].Enum
	require.NotEmpty(t, components)
	fallback := componentOrder("not-a-component")
	for _, c := range components {
		_, label, _ := bandwidthSeries(c, "transmit", "gpu0")
		assert.NotContains(t, label, c+"(", "component %s is drawn under its raw name", c)
		assert.Less(t, componentOrder(c), fallback, "component %s has no place in the legend", c)
	}
}

// TestEveryDirectionHasATag checks that every direction value of the shared vocabulary is drawn
// with the paper's bracketed tag, not its raw upper-cased name: both (an AMD GPU's PCIe, counted
// as one figure) reads TX+RX.
func TestEveryDirectionHasATag(t *testing.T) {
	v, err := metadata.Load()
	require.NoError(t, err)
	directions := v.Attributes["direction"].Enum
	require.Contains(t, directions, "both")
	for _, d := range directions {
		assert.NotEqual(t, strings.ToUpper(d), directionTag(d), "direction %s has no tag", d)
	}
	_, label, _ := bandwidthSeries("gpu_pcie", "both", "gpu0")
	assert.Equal(t, "GPU0 PCIe[TX+RX]", label)
}

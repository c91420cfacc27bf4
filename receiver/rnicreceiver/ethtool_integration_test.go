//go:build linux && integration

package rnicreceiver

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// This test reads the machine's own network devices: it runs with -tags integration.

// TestIoctlEthtoolOnThisMachine runs the real SIOCETHTOOL path (GDRVINFO, GSTRINGS, GSTATS through
// safchain/ethtool) against this machine's own network devices: no privilege is needed, a device
// without driver statistics (lo) and a missing device fail with an error, never a crash.
func TestIoctlEthtoolOnThisMachine(t *testing.T) {
	e, err := newIoctlEthtool()
	require.NoError(t, err)
	defer e.Close()

	_, err = e.Stats("nonexistent0")
	assert.ErrorIs(t, err, unix.ENODEV)

	entries, err := os.ReadDir("/sys/class/net")
	require.NoError(t, err)
	withStats := 0
	for _, ent := range entries {
		stats, err := e.Stats(ent.Name())
		if err == nil && len(stats) > 0 {
			withStats++
		}
	}
	if withStats == 0 {
		t.Skip("no network device on this machine exposes driver statistics")
	}
	// Twice on the same buffers: the preallocated string and value tables are reused.
	for _, ent := range entries {
		first, err1 := e.Stats(ent.Name())
		second, err2 := e.Stats(ent.Name())
		assert.Equal(t, err1 == nil, err2 == nil)
		assert.Equal(t, len(first), len(second), ent.Name())
	}
}

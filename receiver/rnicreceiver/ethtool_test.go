package rnicreceiver

import (
	"os"
	"reflect"
	"testing"
	"unsafe"

	"github.com/safchain/ethtool"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

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

// setCount writes the unexported count field of a safchain/ethtool request, as the kernel's copy
// back after the ioctl does.
func setCount(req any, field string, v uint64) {
	f := reflect.ValueOf(req).Elem().FieldByName(field)
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().SetUint(v)
}

// TestEthtoolCountMismatch: net/ethtool/ioctl.c writes back the count each of ETHTOOL_GSTRINGS
// (gstrings.len) and ETHTOOL_GSTATS (stats.n_stats) used, each from its own get_sset_count; mlx5
// recomputes its PFC statistics per call (en_stats.c mlx5e_query_pfc_combined). Counts that
// differ mean names and values no longer line up: the sample is dropped.
func TestEthtoolCountMismatch(t *testing.T) {
	gs, st := &ethtool.EthtoolGStrings{}, &ethtool.EthtoolStats{}
	setCount(gs, "len", 212)
	setCount(st, "n_stats", 212)
	assert.NoError(t, statsConsistent(gs, st))
	setCount(st, "n_stats", 228) // PFC enabled on two more priorities between the calls
	assert.ErrorIs(t, statsConsistent(gs, st), errStatsChanged)
	assert.Equal(t, uint64(212), ethtoolCount(gs, "len"))
}

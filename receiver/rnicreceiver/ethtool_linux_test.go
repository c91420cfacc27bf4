package rnicreceiver

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/safchain/ethtool"
	"github.com/stretchr/testify/assert"
)

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
	assert.NoError(t, statsConsistent(gs, st, 212))
	setCount(st, "n_stats", 228) // PFC enabled on two more priorities between the calls
	assert.ErrorIs(t, statsConsistent(gs, st, 228), errStatsChanged)
	assert.Equal(t, uint64(212), ethtoolCount(gs, "len"))
}

// TestEthtoolStaleTail: PFC disabled on two priorities between GDRVINFO (228 statistics) and
// GSTRINGS: net/ethtool/ioctl.c ethtool_get_strings and ethtool_get_stats both return 212, so the
// counts agree, but safchain/ethtool v0.7.0 StatsWithBuffer mapped 228 entries from the reused
// buffers: the last 16 are a previous read's. The sample is dropped.
func TestEthtoolStaleTail(t *testing.T) {
	gs, st := &ethtool.EthtoolGStrings{}, &ethtool.EthtoolStats{}
	setCount(gs, "len", 212)
	setCount(st, "n_stats", 212)
	assert.ErrorIs(t, statsConsistent(gs, st, 228), errStatsChanged)
	assert.NoError(t, statsConsistent(gs, st, 200), "duplicate names map to fewer entries")
}

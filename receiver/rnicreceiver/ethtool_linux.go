package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/safchain/ethtool"
)

// ioctlEthtool reads statistics with the SIOCETHTOOL ioctl (GDRVINFO, GSTRINGS, GSTATS), which the
// kernel allows without privilege (net/ethtool/ioctl.c); the netdev must be in the collector's
// network namespace. The string and value buffers (about 1 MiB) are allocated once.
type ioctlEthtool struct {
	tool    *ethtool.Ethtool
	strings *ethtool.EthtoolGStrings
	values  *ethtool.EthtoolStats
}

func newIoctlEthtool() (ethtoolStats, error) {
	tool, err := ethtool.NewEthtool()
	if err != nil {
		return nil, err
	}
	return &ioctlEthtool{tool: tool, strings: &ethtool.EthtoolGStrings{}, values: &ethtool.EthtoolStats{}}, nil
}

// errStatsChanged: the driver's statistics set changed between the string and the value reads.
var errStatsChanged = errors.New("the statistics set changed during the read (strings and values differ in count); sample dropped")

func (e *ioctlEthtool) Stats(netdev string) (map[string]uint64, error) {
	stats, err := e.tool.StatsWithBuffer(netdev, e.strings, e.values)
	if err != nil {
		return nil, err
	}
	// The kernel writes the count it used back into each request (net/ethtool/ioctl.c:
	// ethtool_get_strings sets gstrings.len, ethtool_get_stats sets stats.n_stats, each from a new
	// get_sset_count). mlx5 recomputes its PFC statistics on every call (en_stats.c,
	// mlx5e_query_pfc_combined asks the firmware), so a PFC change between the two ioctls shifts
	// the names against the values; such a sample is dropped rather than misattributed.
	if err := statsConsistent(e.strings, e.values, len(stats)); err != nil {
		return nil, err
	}
	return stats, nil
}

// statsConsistent compares the counts the kernel returned with the strings and with the values,
// and with the n entries the library made of them. safchain/ethtool's StatsWithBuffer maps indexes
// 0..drvinfo.n_stats-1 (the count of the GDRVINFO before both) over buffers this reader reuses
// for every netdev, and the kernel's ethtool_get_strings writes only gstrings.len entries: if the
// set shrank after GDRVINFO, both later counts agree and the entries past them are another
// netdev's (or an earlier read's) names and values. More entries than the kernel returned is that
// stale tail: the sample is dropped.
func statsConsistent(strings *ethtool.EthtoolGStrings, values *ethtool.EthtoolStats, n int) error {
	gotStrings, gotValues := ethtoolCount(strings, "len"), ethtoolCount(values, "n_stats")
	if gotStrings != gotValues {
		return fmt.Errorf("%w: %d strings, %d values", errStatsChanged, gotStrings, gotValues)
	}
	if uint64(n) > gotStrings {
		return fmt.Errorf("%w: %d statistics mapped from the buffers, %d returned by the kernel", errStatsChanged, n, gotStrings)
	}
	return nil
}

// ethtoolCount reads the count field of a safchain/ethtool request struct, which the library
// keeps unexported.
func ethtoolCount(req any, field string) uint64 {
	f := reflect.ValueOf(req).Elem().FieldByName(field)
	if !f.IsValid() {
		return 0
	}
	return f.Uint()
}

func (e *ioctlEthtool) Driver(netdev string) (string, error) { return e.tool.DriverName(netdev) }

func (e *ioctlEthtool) Close() { e.tool.Close() }

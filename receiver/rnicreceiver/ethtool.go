package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"strconv"

	"github.com/safchain/ethtool"

	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver/internal/metadata"
)

// ethtoolStats reads a network device's driver statistics (`ethtool -S`). The kernel's standard
// pause statistics carry only global 802.3x pause; per-priority PFC counters exist only among the
// driver's ETH_SS_STATS strings (mlx5 en_stats.c; Documentation/networking/device_drivers/
// ethernet/mellanox/mlx5/counters.rst).
type ethtoolStats interface {
	Stats(netdev string) (map[string]uint64, error)
	Close()
}

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

func (e *ioctlEthtool) Stats(netdev string) (map[string]uint64, error) {
	return e.tool.StatsWithBuffer(netdev, e.strings, e.values)
}

func (e *ioctlEthtool) Close() { e.tool.Close() }

// ethtoolMetric says which metric an ethtool statistic feeds.
type ethtoolMetric uint8

const (
	ethPFCPause ethtoolMetric = iota
	ethPFCPauseDuration
	ethPause
	ethPauseStorm
	ethPhyBytes
	ethPhyDiscards
)

type ethtoolStat struct {
	name      string
	metric    ethtoolMetric
	direction metadata.AttributeDirection
	priority  int64
	severity  metadata.AttributeSeverity
}

// ethtoolWanted lists the mlx5 statistics we read (mlx5/counters.rst): per-priority PFC pause
// frames and durations (present only for priorities with PFC enabled), link-level pause, the
// pause-storm watchdog, and the physical port's byte and discard totals. The list is looked up in
// the driver's statistics by name, so drivers that name things otherwise simply yield nothing.
var ethtoolWanted = func() []ethtoolStat {
	dirs := []struct {
		prefix string
		dir    metadata.AttributeDirection
	}{{"tx", metadata.AttributeDirectionTransmit}, {"rx", metadata.AttributeDirectionReceive}}
	var out []ethtoolStat
	for _, d := range dirs {
		for p := int64(0); p < 8; p++ {
			prio := d.prefix + "_prio" + strconv.FormatInt(p, 10)
			out = append(out,
				ethtoolStat{name: prio + "_pause", metric: ethPFCPause, direction: d.dir, priority: p},
				ethtoolStat{name: prio + "_pause_duration", metric: ethPFCPauseDuration, direction: d.dir, priority: p},
			)
		}
		out = append(out,
			ethtoolStat{name: d.prefix + "_pause_ctrl_phy", metric: ethPause, direction: d.dir},
			ethtoolStat{name: d.prefix + "_bytes_phy", metric: ethPhyBytes, direction: d.dir},
			ethtoolStat{name: d.prefix + "_discards_phy", metric: ethPhyDiscards, direction: d.dir},
		)
	}
	return append(out,
		ethtoolStat{name: "tx_pause_storm_warning_events", metric: ethPauseStorm, severity: metadata.AttributeSeverityWarning},
		ethtoolStat{name: "tx_pause_storm_error_events", metric: ethPauseStorm, severity: metadata.AttributeSeverityError},
	)
}()

// ethtoolEnabled reports whether any metric read through ethtool is enabled.
func ethtoolEnabled(m metadata.MetricsConfig) bool {
	return m.RnicPfcPauseFrames.Enabled || m.RnicPfcPauseDuration.Enabled || m.RnicPauseFrames.Enabled ||
		m.RnicPauseStormEvents.Enabled || m.RnicPhyIo.Enabled || m.RnicPhyDiscards.Enabled
}

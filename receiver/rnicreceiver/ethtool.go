package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"maps"
	"slices"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver/internal/metadata"
)

// ethtoolStats reads a network device's driver statistics (`ethtool -S`). The kernel's standard
// pause statistics carry only global 802.3x pause; per-priority PFC counters exist only among the
// driver's ETH_SS_STATS strings (mlx5 en_stats.c; Documentation/networking/device_drivers/
// ethernet/mellanox/mlx5/counters.rst), under names of each driver's own (ethtoolTables).
type ethtoolStats interface {
	Stats(netdev string) (map[string]uint64, error)
	// Driver names the netdev's driver as ETHTOOL_GDRVINFO reports it (mlx5_core, bnxt_en, ice).
	Driver(netdev string) (string, error)
	Close()
}

// ethtoolMetric says which metric an ethtool statistic feeds.
type ethtoolMetric uint8

const (
	ethPFCPause ethtoolMetric = iota
	ethPFCPauseDuration
	ethPFCPauseTransitions
	ethPause
	ethPauseDuration
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

// record records the statistic's point for netdev.
func (st *ethtoolStat) record(mb *metadata.MetricsBuilder, now pcommon.Timestamp, netdev string, v int64) {
	switch st.metric {
	case ethPFCPause:
		mb.RecordRnicPfcPauseFramesDataPoint(now, v, netdev, st.direction, st.priority)
	case ethPFCPauseDuration:
		mb.RecordRnicPfcPauseDurationDataPoint(now, v, netdev, st.direction, st.priority)
	case ethPFCPauseTransitions:
		mb.RecordRnicPfcPauseTransitionsDataPoint(now, v, netdev, st.direction, st.priority)
	case ethPause:
		mb.RecordRnicPauseFramesDataPoint(now, v, netdev, st.direction)
	case ethPauseDuration:
		mb.RecordRnicPauseDurationDataPoint(now, v, netdev, st.direction)
	case ethPauseStorm:
		mb.RecordRnicPauseStormEventsDataPoint(now, v, netdev, st.severity)
	case ethPhyBytes:
		mb.RecordRnicPhyIoDataPoint(now, v, netdev, st.direction)
	case ethPhyDiscards:
		mb.RecordRnicPhyDiscardsDataPoint(now, v, netdev, st.direction)
	}
}

func perPriority(prefix, suffix string, metric ethtoolMetric, dir metadata.AttributeDirection) []ethtoolStat {
	out := make([]ethtoolStat, 0, 8)
	for p := int64(0); p < 8; p++ {
		out = append(out, ethtoolStat{name: prefix + strconv.FormatInt(p, 10) + suffix, metric: metric, direction: dir, priority: p})
	}
	return out
}

const (
	tx = metadata.AttributeDirectionTransmit
	rx = metadata.AttributeDirectionReceive
)

// ethtoolTables are the statistics read per driver, keyed by the driver name GDRVINFO reports.
// Each driver names PFC and pause counters its own way:
//   - mlx5_core (mlx5/counters.rst; en_stats.c): per-priority PFC pause frames and durations
//     (present only for priorities with PFC enabled), 802.3x pause frames (rx/tx_pause_ctrl_phy)
//     and their duration with global pause on (rx/tx_global_pause_duration, en_stats.c
//     pport_per_prio_pfc_stats_desc "global"), the pause-storm watchdog, and the physical port's
//     byte and discard totals.
//   - bnxt_en (bnxt_ethtool.c): rx/tx_pfc_ena_frames_pri<p>, rx/tx_pause_frames, and the
//     extended port statistics' BNXT_RX/TX_STATS_EXT_PFC_ENTRY(n): pfc_pri<n>_rx/tx_duration_us
//     and pfc_pri<n>_rx/tx_transitions (present where the firmware's extended stats reach them).
//   - bng_en, the bnge driver of Broadcom's next generation (drivers/net/ethernet/broadcom/bnge,
//     bnge_ethtool.c; GDRVINFO's driver is DRV_NAME, the module name bng_en): port statistics
//     prefixed "rxp_"/"txp_" (BNGE_RX/TX_PORT_STATS_ENTRY: rxp_pfc_ena_frames_pri<p>) and the
//     same PFC duration and transition names (BNGE_RX/TX_STATS_EXT_PFC_ENTRY). 802.3x pause
//     frames are not among its ethtool -S strings (bnge_get_pause_stats gives them to the
//     standard pause statistics only), so it has no rnic.pause.frames.
//   - ice (ice_ethtool.c): rx/tx_priority_<p>_xoff.nic and link_xoff_rx/tx.nic (older drivers
//     without the .nic suffix).
//   - i40e (i40e_ethtool.c): port.rx_priority_<p>_xoff_rx, port.tx_priority_<p>_xoff_tx,
//     port.link_xoff_rx/tx.
var ethtoolTables = map[string][]ethtoolStat{
	"mlx5_core": slices.Concat(
		perPriority("tx_prio", "_pause", ethPFCPause, tx), perPriority("tx_prio", "_pause_duration", ethPFCPauseDuration, tx),
		perPriority("rx_prio", "_pause", ethPFCPause, rx), perPriority("rx_prio", "_pause_duration", ethPFCPauseDuration, rx),
		[]ethtoolStat{
			{name: "tx_pause_ctrl_phy", metric: ethPause, direction: tx},
			{name: "rx_pause_ctrl_phy", metric: ethPause, direction: rx},
			{name: "tx_global_pause_duration", metric: ethPauseDuration, direction: tx},
			{name: "rx_global_pause_duration", metric: ethPauseDuration, direction: rx},
			{name: "tx_bytes_phy", metric: ethPhyBytes, direction: tx},
			{name: "rx_bytes_phy", metric: ethPhyBytes, direction: rx},
			{name: "tx_discards_phy", metric: ethPhyDiscards, direction: tx},
			{name: "rx_discards_phy", metric: ethPhyDiscards, direction: rx},
			{name: "tx_pause_storm_warning_events", metric: ethPauseStorm, severity: metadata.AttributeSeverityWarning},
			{name: "tx_pause_storm_error_events", metric: ethPauseStorm, severity: metadata.AttributeSeverityError},
		}),
	"bnxt_en": slices.Concat(
		perPriority("tx_pfc_ena_frames_pri", "", ethPFCPause, tx), perPriority("rx_pfc_ena_frames_pri", "", ethPFCPause, rx),
		broadcomPFCExt(),
		[]ethtoolStat{{name: "tx_pause_frames", metric: ethPause, direction: tx}, {name: "rx_pause_frames", metric: ethPause, direction: rx}}),
	"bng_en": slices.Concat(
		perPriority("txp_pfc_ena_frames_pri", "", ethPFCPause, tx), perPriority("rxp_pfc_ena_frames_pri", "", ethPFCPause, rx),
		broadcomPFCExt()),
	"ice": slices.Concat(
		perPriority("tx_priority_", "_xoff.nic", ethPFCPause, tx), perPriority("rx_priority_", "_xoff.nic", ethPFCPause, rx),
		perPriority("tx_priority_", "_xoff", ethPFCPause, tx), perPriority("rx_priority_", "_xoff", ethPFCPause, rx),
		[]ethtoolStat{
			{name: "link_xoff_tx.nic", metric: ethPause, direction: tx}, {name: "link_xoff_rx.nic", metric: ethPause, direction: rx},
			{name: "link_xoff_tx", metric: ethPause, direction: tx}, {name: "link_xoff_rx", metric: ethPause, direction: rx},
		}),
	"i40e": slices.Concat(
		perPriority("port.tx_priority_", "_xoff_tx", ethPFCPause, tx), perPriority("port.rx_priority_", "_xoff_rx", ethPFCPause, rx),
		[]ethtoolStat{{name: "port.link_xoff_tx", metric: ethPause, direction: tx}, {name: "port.link_xoff_rx", metric: ethPause, direction: rx}}),
}

// broadcomPFCExt are the per-priority PFC duration (µs) and transition counters of bnxt_en
// (bnxt_ethtool.c BNXT_RX/TX_STATS_EXT_PFC_ENTRY) and bnge (bnge_ethtool.c
// BNGE_RX/TX_STATS_EXT_PFC_ENTRY): pfc_pri<n>_rx_duration_us, pfc_pri<n>_rx_transitions, and tx.
func broadcomPFCExt() []ethtoolStat {
	return slices.Concat(
		perPriority("pfc_pri", "_rx_duration_us", ethPFCPauseDuration, rx), perPriority("pfc_pri", "_tx_duration_us", ethPFCPauseDuration, tx),
		perPriority("pfc_pri", "_rx_transitions", ethPFCPauseTransitions, rx), perPriority("pfc_pri", "_tx_transitions", ethPFCPauseTransitions, tx))
}

// ethtoolAll is every table at once, for a driver not in ethtoolTables or not known (a replayed
// recording without driver names). A name two drivers share (bnxt_en's and bng_en's PFC
// durations) means the same in both and is read once.
var ethtoolAll = func() []ethtoolStat {
	var out []ethtoolStat
	seen := map[string]bool{}
	for _, drv := range slices.Sorted(maps.Keys(ethtoolTables)) {
		for _, st := range ethtoolTables[drv] {
			if !seen[st.name] {
				seen[st.name] = true
				out = append(out, st)
			}
		}
	}
	return out
}()

// ethtoolTable returns the statistics read for a driver.
func ethtoolTable(driver string) []ethtoolStat {
	if t, ok := ethtoolTables[driver]; ok {
		return t
	}
	return ethtoolAll
}

// ethtoolEnabled reports whether any metric read through ethtool is enabled.
func ethtoolEnabled(m metadata.MetricsConfig) bool {
	return m.RnicPfcPauseFrames.Enabled || m.RnicPfcPauseDuration.Enabled || m.RnicPfcPauseTransitions.Enabled || m.RnicPauseFrames.Enabled ||
		m.RnicPauseStormEvents.Enabled || m.RnicPhyIo.Enabled || m.RnicPhyDiscards.Enabled || m.RnicPauseDuration.Enabled
}

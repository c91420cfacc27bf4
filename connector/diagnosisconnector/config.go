package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector/internal/metadata"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// Config of the diagnosis connector. Every threshold is a ratio of two rates the receivers
// measure (or of a rate to the port's own line rate), never an absolute byte rate, so that a node
// with other links gets the same verdicts; README.md gives the reasoning for each default.
type Config struct {
	// Interval between two evaluations of every node. Prometheus evaluates the generated rules
	// at the same interval. Set it to the receivers' collection_interval (the slowest one).
	Interval time.Duration `mapstructure:"interval"`
	// Window bounds how old the two newest samples of a counter may be for it to have a rate
	// (PromQL irate(x[window])): a counter with fewer than two samples in the window counts as
	// absent. At least two collection intervals.
	Window time.Duration `mapstructure:"window"`
	// Hold is how many consecutive evaluations a verdict's condition must hold before the verdict
	// is raised (the rules' `for:` is (hold-1) x interval). 2 keeps a half-updated node, whose
	// receivers have not all reported the change yet, from raising a verdict for one evaluation.
	Hold int `mapstructure:"hold"`
	// StaleAfter forgets a node, and ignores a gauge, that has not reported for this long
	// (Prometheus' default lookback delta is 5m).
	StaleAfter time.Duration `mapstructure:"stale_after"`
	// MaxNodes bounds the memory: beyond it the node seen least recently is forgotten.
	MaxNodes int `mapstructure:"max_nodes"`
	// PortRateMemory is how long the highest rate a port reported is remembered: a port below it
	// has trained down (link_degraded).
	PortRateMemory time.Duration `mapstructure:"port_rate_memory"`
	// MaxClockSkew refuses points stamped further than this from the collector's clock, ahead or
	// behind (counted, said once): one point stamped years ahead would stay a series' newest
	// sample and freeze the node's diagnosis. 0 refuses none.
	MaxClockSkew time.Duration `mapstructure:"max_clock_skew"`
	// CollectiveStallAfter: an NCCL communicator whose operation count (RAS) has not moved for
	// this long while another communicator of the node advances is stalled (collective_stalled).
	CollectiveStallAfter time.Duration `mapstructure:"collective_stall_after"`
	// PerOwner evaluates each pod's or job's traffic on its own too (the owner receiver's
	// interconnect.owner in the same pipeline): node-level verdicts per owner, and the owner on
	// every device verdict (README.md#per-owner-verdicts). Off by default: a consumer that reads
	// diagnosis.verdict by node and device alone would mix an owner's verdicts with the node's.
	PerOwner bool `mapstructure:"per_owner"`
	// Capture names a capture extension (extension/captureextension): when a fault verdict is
	// raised (any but healthy_gpudirect and idle) the extension writes the rings the receivers of
	// this collector keep (bursts.capture) as recordings, the verdict's sentence as their note
	// (README.md#capturing-the-burst-behind-a-verdict). Unset: nothing is captured.
	Capture *component.ID `mapstructure:"capture"`
	// Thresholds of the verdicts.
	Thresholds Thresholds `mapstructure:"thresholds"`
	// Verdicts turns verdicts off: {idle: {enabled: false}}. All are on by default.
	Verdicts map[string]VerdictConfig `mapstructure:"verdicts"`

	metadata.MetricsBuilderConfig `mapstructure:",squash"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// VerdictConfig switches one verdict on or off.
type VerdictConfig struct {
	Enabled bool `mapstructure:"enabled"`
}

// Thresholds of the verdicts (README.md, "Verdicts", says why each default is what it is).
type Thresholds struct {
	// BusyLineShare: the node's network (RDMA + IP bytes, both directions) or its GPUs' PCIe
	// bytes at or above this share of its ports' line rate (both directions) is traffic; below,
	// with nothing else, the node is idle.
	BusyLineShare float64 `mapstructure:"busy_line_share"`
	// MinRDMAShare: at least this share of the network bytes must be RDMA for a node's traffic to
	// be GPUDirect (healthy, bounce, congestion).
	MinRDMAShare float64 `mapstructure:"min_rdma_share"`
	// FallbackMaxRDMAShare: at most this share of the network bytes is RDMA in a TCP fallback.
	FallbackMaxRDMAShare float64 `mapstructure:"fallback_max_rdma_share"`
	// FallbackMinPCIeWritePerNetworkByte: in a TCP fallback every network byte is written into
	// host memory by a device (the GPU the data it sends, the NIC the data it receives): the CPU
	// PCIe device-to-host writes, on all root ports, must reach this many per network byte ...
	FallbackMinPCIeWritePerNetworkByte float64 `mapstructure:"fallback_min_pcie_write_per_network_byte"`
	// FallbackMinMemoryPerNetworkByte: ... and host memory, which the bytes cross several times,
	// this many.
	FallbackMinMemoryPerNetworkByte float64 `mapstructure:"fallback_min_host_memory_per_network_byte"`
	// UnwatchedMinGPUTransmitShare: a socket transport on an interface no receiver watches is
	// told from data loading (the GPU only receiving) by the GPU sending at least this share of
	// its PCIe bytes (README.md#tcp-fallback).
	UnwatchedMinGPUTransmitShare float64 `mapstructure:"unwatched_min_gpu_transmit_share"`
	// BounceMinPathWritePerRDMAByte: device-to-host PCIe writes on the GPUs' and NICs' root ports
	// per RDMA byte at or above which the RDMA data is staged in host memory.
	BounceMinPathWritePerRDMAByte float64 `mapstructure:"bounce_min_path_write_per_rdma_byte"`
	// BounceMinHostMemoryPerNetworkByte: host memory bytes per network byte a bounce needs too.
	BounceMinHostMemoryPerNetworkByte float64 `mapstructure:"bounce_min_host_memory_per_network_byte"`
	// HealthyMaxPathWritePerRDMAByte: healthy GPUDirect (and congestion, "host quiet") needs the
	// root ports' writes below this share of the RDMA bytes.
	HealthyMaxPathWritePerRDMAByte float64 `mapstructure:"healthy_max_path_write_per_rdma_byte"`
	// CongestionMaxLineShare: a port transmitting below this share of its line rate ...
	CongestionMaxLineShare float64 `mapstructure:"congestion_max_transmit_line_share"`
	// CongestionMinMarksPerPacket: ... while this share of its packets carries congestion
	// evidence (ECN marks received, CNPs sent or handled) is congested.
	CongestionMinMarksPerPacket float64 `mapstructure:"congestion_min_marks_per_packet"`
	// CongestionBurstShare and CongestionMinBurstTimeShare: a port below that line share on
	// average that transmitted at or above this share of its line rate for at least this share of
	// the time (the rnic receiver's fast sampler, rnic.burst.time_above of this burst.share: it
	// must be one of the receiver's bursts.shares, 0.5 and 0.9 by default) ...
	CongestionBurstShare        float64 `mapstructure:"congestion_burst_share"`
	CongestionMinBurstTimeShare float64 `mapstructure:"congestion_min_burst_time_share"`
	// CongestionBurstMinMarksPerPacket and CongestionBurstMinPauseFramesPerGbps: ... while at
	// least this share of its packets carried a mark, or its netdev sent or received this many
	// pause frames per second per Gb/s of its rate, is congested in bursts
	// (README.md#fabric-congestion). Without bursts.period on the receiver it never is.
	CongestionBurstMinMarksPerPacket     float64 `mapstructure:"congestion_burst_min_marks_per_packet"`
	CongestionBurstMinPauseFramesPerGbps float64 `mapstructure:"congestion_burst_min_pause_frames_per_gbps"`
	// StormMinPauseTimeShare: a port paused (PFC, any priority, either direction) this share of
	// the time or more is in a pause storm ...
	StormMinPauseTimeShare float64 `mapstructure:"storm_min_pause_time_share"`
	// StormMinPauseFramesPerGbps: ... as is one whose pause frames per second exceed this many per
	// Gb/s of its line rate (for NICs without pause-duration counters).
	StormMinPauseFramesPerGbps float64 `mapstructure:"storm_min_pause_frames_per_gbps"`
	// CollectiveSlowMaxPathShare: an NCCL collective type whose large messages' bus bandwidth is
	// below this share of what its path carries (its GPU's nearest NIC, capped by the GPU's PCIe
	// link) is slow.
	CollectiveSlowMaxPathShare float64 `mapstructure:"collective_slow_max_path_share"`
	// StragglerMinBusBandwidthRatio: across the nodes of an NCCL communicator, a node whose
	// large messages' bus bandwidth of a collective type is at least this many times the next
	// node's is the straggler: its ranks arrive last, so theirs is the one collective that does
	// not wait, and every other node's includes the wait (README.md#straggler).
	StragglerMinBusBandwidthRatio float64 `mapstructure:"straggler_min_bus_bandwidth_ratio"`
	// NVLinkIdleShare: a GPU's NVLink link carrying below this share of its busiest link's bytes
	// ...
	NVLinkIdleShare float64 `mapstructure:"nvlink_idle_share"`
	// NVLinkBusyBytesPerSecond: ... while that link carries at least this many bytes/s (both
	// directions) is degraded: a link left out while its peers carry traffic.
	NVLinkBusyBytesPerSecond float64 `mapstructure:"nvlink_busy_bytes_per_second"`
	// NVLinkMaxErrorsPerSecond: a link whose data-link errors (CRC, replay, recovery together)
	// reach this many a second is degraded too.
	NVLinkMaxErrorsPerSecond float64 `mapstructure:"nvlink_max_errors_per_second"`
}

// defaultThresholds are the defaults README.md reasons about.
func defaultThresholds() Thresholds {
	return Thresholds{
		BusyLineShare:                        0.05,
		MinRDMAShare:                         0.5,
		FallbackMaxRDMAShare:                 0.2,
		FallbackMinPCIeWritePerNetworkByte:   0.5,
		FallbackMinMemoryPerNetworkByte:      1.0,
		UnwatchedMinGPUTransmitShare:         0.25,
		BounceMinPathWritePerRDMAByte:        0.25,
		BounceMinHostMemoryPerNetworkByte:    0.25,
		HealthyMaxPathWritePerRDMAByte:       0.1,
		CongestionMaxLineShare:               0.5,
		CongestionMinMarksPerPacket:          0.001,
		CongestionBurstShare:                 0.9,
		CongestionMinBurstTimeShare:          0.05,
		CongestionBurstMinMarksPerPacket:     0.0001,
		CongestionBurstMinPauseFramesPerGbps: 1,
		StormMinPauseTimeShare:               0.5,
		StormMinPauseFramesPerGbps:           100,
		CollectiveSlowMaxPathShare:           0.5,
		StragglerMinBusBandwidthRatio:        2,
		NVLinkIdleShare:                      0.01,
		NVLinkBusyBytesPerSecond:             1e9,
		NVLinkMaxErrorsPerSecond:             1,
	}
}

func createDefaultConfig() *Config {
	return &Config{
		Interval:             10 * time.Second,
		Window:               30 * time.Second,
		Hold:                 2,
		StaleAfter:           5 * time.Minute,
		MaxNodes:             1024,
		PortRateMemory:       time.Hour,
		MaxClockSkew:         10 * time.Minute,
		CollectiveStallAfter: time.Minute,
		Thresholds:           defaultThresholds(),
		MetricsBuilderConfig: metadata.DefaultMetricsBuilderConfig(),
	}
}

// enabled reports whether verdict v is evaluated.
func (c *Config) enabled(v string) bool {
	vc, ok := c.Verdicts[v]
	return !ok || vc.Enabled
}

// Validate rejects configurations that cannot give a meaningful verdict; each message names its
// key, says the problem and what it got.
func (c *Config) Validate() error {
	var errs []error
	if c.Interval <= 0 {
		errs = append(errs, fmt.Errorf("interval: must be positive, got %s", c.Interval))
	}
	if c.Window < 2*c.Interval {
		errs = append(errs, fmt.Errorf("window: must be at least two intervals (%s): a rate needs two samples, got %s", 2*c.Interval, c.Window))
	}
	if c.Hold < 1 {
		errs = append(errs, fmt.Errorf("hold: must be at least 1 evaluation, got %d", c.Hold))
	}
	if c.StaleAfter < c.Window {
		errs = append(errs, fmt.Errorf("stale_after: must not be shorter than window (%s), got %s", c.Window, c.StaleAfter))
	}
	if c.MaxNodes < 1 {
		errs = append(errs, fmt.Errorf("max_nodes: must be at least 1, got %d", c.MaxNodes))
	}
	if c.PortRateMemory < c.Interval {
		errs = append(errs, fmt.Errorf("port_rate_memory: must be at least one interval (%s), got %s", c.Interval, c.PortRateMemory))
	}
	if c.MaxClockSkew < 0 {
		errs = append(errs, fmt.Errorf("max_clock_skew: must not be negative, got %s", c.MaxClockSkew))
	} else if c.MaxClockSkew > 0 && c.MaxClockSkew < c.Window {
		errs = append(errs, fmt.Errorf("max_clock_skew: must be 0 (off) or at least window (%s), or samples inside the window are refused, got %s", c.Window, c.MaxClockSkew))
	}
	if c.CollectiveStallAfter < 2*c.Interval {
		errs = append(errs, fmt.Errorf("collective_stall_after: must be at least two intervals (%s): a count stands still between two samples, got %s", 2*c.Interval, c.CollectiveStallAfter))
	}
	var unknown []string
	for v := range c.Verdicts {
		if _, ok := metadata.MapAttributeVerdict[v]; !ok {
			unknown = append(unknown, v)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		errs = append(errs, fmt.Errorf("verdicts: unknown verdict (known: %s), got %s", strings.Join(verdict.Names(), ", "), strings.Join(unknown, ", ")))
	}
	return errors.Join(append(errs, c.Thresholds.validate())...)
}

func (t Thresholds) validate() error {
	var errs []error
	share := func(name string, v float64) {
		if !(v > 0 && v <= 1) || math.IsNaN(v) {
			errs = append(errs, fmt.Errorf("thresholds::%s: must be a share in (0, 1], got %v", name, v))
		}
	}
	positive := func(name string, v float64) {
		if !(v > 0) || math.IsInf(v, 0) {
			errs = append(errs, fmt.Errorf("thresholds::%s: must be positive, got %v", name, v))
		}
	}
	share("busy_line_share", t.BusyLineShare)
	share("min_rdma_share", t.MinRDMAShare)
	share("fallback_max_rdma_share", t.FallbackMaxRDMAShare)
	share("unwatched_min_gpu_transmit_share", t.UnwatchedMinGPUTransmitShare)
	share("congestion_max_transmit_line_share", t.CongestionMaxLineShare)
	share("congestion_min_marks_per_packet", t.CongestionMinMarksPerPacket)
	share("congestion_burst_share", t.CongestionBurstShare)
	share("congestion_min_burst_time_share", t.CongestionMinBurstTimeShare)
	share("congestion_burst_min_marks_per_packet", t.CongestionBurstMinMarksPerPacket)
	positive("congestion_burst_min_pause_frames_per_gbps", t.CongestionBurstMinPauseFramesPerGbps)
	share("storm_min_pause_time_share", t.StormMinPauseTimeShare)
	share("collective_slow_max_path_share", t.CollectiveSlowMaxPathShare)
	share("nvlink_idle_share", t.NVLinkIdleShare)
	positive("nvlink_busy_bytes_per_second", t.NVLinkBusyBytesPerSecond)
	positive("nvlink_max_errors_per_second", t.NVLinkMaxErrorsPerSecond)
	positive("fallback_min_pcie_write_per_network_byte", t.FallbackMinPCIeWritePerNetworkByte)
	positive("fallback_min_host_memory_per_network_byte", t.FallbackMinMemoryPerNetworkByte)
	positive("bounce_min_path_write_per_rdma_byte", t.BounceMinPathWritePerRDMAByte)
	positive("bounce_min_host_memory_per_network_byte", t.BounceMinHostMemoryPerNetworkByte)
	positive("healthy_max_path_write_per_rdma_byte", t.HealthyMaxPathWritePerRDMAByte)
	positive("storm_min_pause_frames_per_gbps", t.StormMinPauseFramesPerGbps)
	if !(t.StragglerMinBusBandwidthRatio > 1) || math.IsInf(t.StragglerMinBusBandwidthRatio, 0) {
		errs = append(errs, fmt.Errorf("thresholds::straggler_min_bus_bandwidth_ratio: must be above 1 (equal bus bandwidths are no straggler), got %v", t.StragglerMinBusBandwidthRatio))
	}
	// The verdicts are exclusive only while their bands do not overlap.
	if t.FallbackMaxRDMAShare >= t.MinRDMAShare {
		errs = append(errs, fmt.Errorf("thresholds::fallback_max_rdma_share: must be below min_rdma_share (%v): a node cannot be both TCP and RDMA, got %v", t.MinRDMAShare, t.FallbackMaxRDMAShare))
	}
	if t.HealthyMaxPathWritePerRDMAByte >= t.BounceMinPathWritePerRDMAByte {
		errs = append(errs, fmt.Errorf("thresholds::healthy_max_path_write_per_rdma_byte: must be below bounce_min_path_write_per_rdma_byte (%v): a node cannot be both healthy and bouncing, got %v", t.BounceMinPathWritePerRDMAByte, t.HealthyMaxPathWritePerRDMAByte))
	}
	return errors.Join(errs...)
}

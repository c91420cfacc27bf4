package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector/internal/metadata"
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
	// StormMinPauseTimeShare: a port paused (PFC, any priority, either direction) this share of
	// the time or more is in a pause storm ...
	StormMinPauseTimeShare float64 `mapstructure:"storm_min_pause_time_share"`
	// StormMinPauseFramesPerGbps: ... as is one whose pause frames per second exceed this many per
	// Gb/s of its line rate (for NICs without pause-duration counters).
	StormMinPauseFramesPerGbps float64 `mapstructure:"storm_min_pause_frames_per_gbps"`
}

// DefaultThresholds are the defaults README.md reasons about.
func DefaultThresholds() Thresholds {
	return Thresholds{
		BusyLineShare:                      0.05,
		MinRDMAShare:                       0.5,
		FallbackMaxRDMAShare:               0.2,
		FallbackMinPCIeWritePerNetworkByte: 0.5,
		FallbackMinMemoryPerNetworkByte:    1.0,
		BounceMinPathWritePerRDMAByte:      0.25,
		BounceMinHostMemoryPerNetworkByte:  0.25,
		HealthyMaxPathWritePerRDMAByte:     0.1,
		CongestionMaxLineShare:             0.5,
		CongestionMinMarksPerPacket:        0.001,
		StormMinPauseTimeShare:             0.5,
		StormMinPauseFramesPerGbps:         100,
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
		Thresholds:           DefaultThresholds(),
		MetricsBuilderConfig: metadata.DefaultMetricsBuilderConfig(),
	}
}

// Enabled reports whether verdict v is evaluated.
func (c *Config) Enabled(v string) bool {
	vc, ok := c.Verdicts[v]
	return !ok || vc.Enabled
}

// Validate rejects configurations that cannot give a meaningful verdict.
func (c *Config) Validate() error {
	var errs []error
	if c.Interval <= 0 {
		errs = append(errs, errors.New("interval must be positive"))
	}
	if c.Window < 2*c.Interval {
		errs = append(errs, fmt.Errorf("window (%s) must be at least two intervals (%s): a rate needs two samples", c.Window, 2*c.Interval))
	}
	if c.Hold < 1 {
		errs = append(errs, errors.New("hold must be at least 1 evaluation"))
	}
	if c.StaleAfter < c.Window {
		errs = append(errs, fmt.Errorf("stale_after (%s) must not be shorter than window (%s)", c.StaleAfter, c.Window))
	}
	if c.MaxNodes < 1 {
		errs = append(errs, errors.New("max_nodes must be at least 1"))
	}
	if c.PortRateMemory < c.Interval {
		errs = append(errs, fmt.Errorf("port_rate_memory (%s) must be at least one interval", c.PortRateMemory))
	}
	var unknown []string
	for v := range c.Verdicts {
		if _, ok := metadata.MapAttributeVerdict[v]; !ok {
			unknown = append(unknown, v)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		errs = append(errs, fmt.Errorf("verdicts: unknown %s (known: %s)", strings.Join(unknown, ", "), strings.Join(Verdicts(), ", ")))
	}
	return errors.Join(append(errs, c.Thresholds.validate())...)
}

func (t Thresholds) validate() error {
	var errs []error
	share := func(name string, v float64) {
		if !(v > 0 && v <= 1) || math.IsNaN(v) {
			errs = append(errs, fmt.Errorf("thresholds::%s must be a share in (0, 1], not %v", name, v))
		}
	}
	positive := func(name string, v float64) {
		if !(v > 0) || math.IsInf(v, 0) {
			errs = append(errs, fmt.Errorf("thresholds::%s must be positive, not %v", name, v))
		}
	}
	share("busy_line_share", t.BusyLineShare)
	share("min_rdma_share", t.MinRDMAShare)
	share("fallback_max_rdma_share", t.FallbackMaxRDMAShare)
	share("congestion_max_transmit_line_share", t.CongestionMaxLineShare)
	share("congestion_min_marks_per_packet", t.CongestionMinMarksPerPacket)
	share("storm_min_pause_time_share", t.StormMinPauseTimeShare)
	positive("fallback_min_pcie_write_per_network_byte", t.FallbackMinPCIeWritePerNetworkByte)
	positive("fallback_min_host_memory_per_network_byte", t.FallbackMinMemoryPerNetworkByte)
	positive("bounce_min_path_write_per_rdma_byte", t.BounceMinPathWritePerRDMAByte)
	positive("bounce_min_host_memory_per_network_byte", t.BounceMinHostMemoryPerNetworkByte)
	positive("healthy_max_path_write_per_rdma_byte", t.HealthyMaxPathWritePerRDMAByte)
	positive("storm_min_pause_frames_per_gbps", t.StormMinPauseFramesPerGbps)
	// The verdicts are exclusive only while their bands do not overlap.
	if t.FallbackMaxRDMAShare >= t.MinRDMAShare {
		errs = append(errs, fmt.Errorf("thresholds::fallback_max_rdma_share (%v) must be below min_rdma_share (%v): a node cannot be both TCP and RDMA", t.FallbackMaxRDMAShare, t.MinRDMAShare))
	}
	if t.HealthyMaxPathWritePerRDMAByte >= t.BounceMinPathWritePerRDMAByte {
		errs = append(errs, fmt.Errorf("thresholds::healthy_max_path_write_per_rdma_byte (%v) must be below bounce_min_path_write_per_rdma_byte (%v): a node cannot be both healthy and bouncing", t.HealthyMaxPathWritePerRDMAByte, t.BounceMinPathWritePerRDMAByte))
	}
	return errors.Join(errs...)
}

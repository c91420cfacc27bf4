package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/scraper/scraperhelper"

	"github.com/otelcol-iclens/otelcol-iclens/internal/burst"
	"github.com/otelcol-iclens/otelcol-iclens/internal/capture"
	"github.com/otelcol-iclens/otelcol-iclens/internal/devicefilter"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver/internal/metadata"
)

// Config is the rnic receiver's configuration.
type Config struct {
	scraperhelper.ControllerConfig `mapstructure:",squash"`
	metadata.MetricsBuilderConfig  `mapstructure:",squash"`

	// RootPath is the host's filesystem root; sysfs is read under RootPath/sys. Set it to where the
	// host's root is mounted when the collector runs in a container (as hostmetrics' root_path).
	RootPath string `mapstructure:"root_path"`

	// Filter selects the RDMA devices read (include / exclude, each devices and a match_type; glob
	// by default: mlx5_*, rocep*s0f*). A port can be named as device/port (mlx5_0/1). Exclusion
	// wins over inclusion; excluded devices are never read.
	devicefilter.Filter `mapstructure:",squash"`

	// Ethtool controls the PFC / pause / physical-port counters read through the ethtool ioctl
	// from each port's network device.
	Ethtool EthtoolConfig `mapstructure:"ethtool"`

	// Topology controls the PCIe topology and GPUDirect RDMA readiness metrics (rnic.topology.*).
	Topology TopologyConfig `mapstructure:"topology"`

	// SlowInterval is how often the counters that move rarely are read: the PMA error counters
	// (rnic.port.errors), the transport events and errors (rnic.transport.*) and driver counters
	// that feed only rnic.driver.counter (on mlx5 every counter read is a firmware command). Bytes,
	// packets, port_xmit_wait, CNPs, ECN marks, link state and rate are read on every scrape. A
	// slow counter has a point only on the scrapes that read it. 0 reads everything on every scrape.
	SlowInterval time.Duration `mapstructure:"slow_interval"`

	// ReadTimeout bounds the reads of one device in one scrape, and in one discovery (never past
	// the scrape's own timeout). A device whose reads do not return in time (a sysfs read stuck
	// behind hung firmware) is skipped, with its series, until they do (an error of every scrape in
	// between); the others are read as usual and shutdown does not wait for it.
	ReadTimeout time.Duration `mapstructure:"read_timeout"`

	// Bursts is the fast sampler of the byte counters (README.md, "Microbursts"): off by default.
	Bursts BurstsConfig `mapstructure:"bursts"`

	// Recording records the raw readings (recording.write) or replays a recording instead of the
	// node (recording.replay); see internal/recording/FORMAT.md. Start fails when the replay
	// cannot be read or the recording cannot be created.
	Recording recording.Settings `mapstructure:"recording"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// EthtoolConfig controls the ethtool statistics.
type EthtoolConfig struct {
	// Enabled turns the ethtool reads on. They need the host's network namespace (the netdev must
	// be visible to the collector) and no privilege; on mlx5 each read is a firmware query.
	Enabled bool `mapstructure:"enabled"`
}

// TopologyConfig controls the topology part of the receiver.
type TopologyConfig struct {
	// Enabled turns the PCI tree scan on. It reads sysfs only, when devices are discovered and
	// every RefreshInterval.
	Enabled bool `mapstructure:"enabled"`
	// RefreshInterval re-resolves the topology (links retrain, modules load); 0 resolves it only
	// when the RDMA device set changes.
	RefreshInterval time.Duration `mapstructure:"refresh_interval"`
	// AllPairs reports rnic.topology.gpu_distance, acs_redirect and gpudirect_ready for every
	// GPU-NIC pair. By default only the pairs NCCL can use for GPUDirect RDMA at its default
	// level (PIX or PXB) and each GPU's nearest NIC are reported.
	AllPairs bool `mapstructure:"all_pairs"`
}

// BurstsConfig controls the fast sampler, which reads only the byte counters (the PMA data counters
// or the driver's byte counters, and the netdevs' tx/rx bytes) every Period on a goroutine of its
// own, and folds them into each collection interval: rnic.burst.peak_rate, rnic.burst.time_above
// and the rnic.burst.utilization histogram.
type BurstsConfig struct {
	// Period is the sampling period; 0 turns the sampler off. At least 10ms, shorter than
	// collection_interval.
	Period time.Duration `mapstructure:"period"`
	// Shares are the shares of the line rate whose time above is counted (rnic.burst.time_above),
	// each above 0 and at most 1.
	Shares []float64 `mapstructure:"shares"`
	// Capture names a capture extension (extension/captureextension): the receiver keeps the
	// last CaptureWindow of its readings (every scrape's files and ethtool statistics, and the
	// fast sampler's passes between them) in memory, and the extension writes them as a
	// recording when the diagnosis raises a verdict or an operator asks from the view
	// (README.md, "Capturing a burst"). Unset: nothing is kept.
	Capture *component.ID `mapstructure:"capture"`
	// CaptureWindow is how much the ring keeps, at least one collection_interval.
	CaptureWindow time.Duration `mapstructure:"capture_window"`
}

// maxBurstShares bounds bursts.shares: each share is a series per port and direction.
const maxBurstShares = 4

// minReadTimeout is the shortest read_timeout: a device's reads are handed to a goroutine of their
// own (readgroup.go), and a deadline shorter than scheduling it on a loaded node skips every
// device, which would read as a node without RDMA ports.
const minReadTimeout = 10 * time.Millisecond

// minCollectionInterval is the shortest collection_interval. The collector's scraper controller
// logs one "Error scraping metrics" line for every scrape that returns an error
// (scraper/scraperhelper obs_metrics.go): with a counter failing on every scrape, a 1 ms interval
// wrote about 13 KB/s of log. At 100 ms it is at most 10 lines a second, and the counters, which
// the kernel and firmware refresh every few ms at best (mlx5 hw_counters lifespan 10 ms), do not
// move in between in any way worth reading.
const minCollectionInterval = 100 * time.Millisecond

// Validate checks the configuration.
func (cfg *Config) Validate() error {
	errs := []error{sysfs.ValidateRootPath(cfg.RootPath), cfg.Filter.Validate()}
	if cfg.SlowInterval < 0 {
		errs = append(errs, fmt.Errorf("slow_interval: must not be negative, got %v", cfg.SlowInterval))
	}
	if cfg.ReadTimeout < minReadTimeout {
		errs = append(errs, fmt.Errorf("read_timeout: must be at least %v, got %v", minReadTimeout, cfg.ReadTimeout))
	}
	if cfg.CollectionInterval > 0 && cfg.CollectionInterval < minCollectionInterval {
		errs = append(errs, fmt.Errorf("collection_interval: must be at least %v, got %v", minCollectionInterval, cfg.CollectionInterval))
	}
	errs = append(errs, cfg.Bursts.validate(cfg.CollectionInterval)...)
	if cfg.Topology.RefreshInterval < 0 {
		errs = append(errs, fmt.Errorf("topology.refresh_interval: must not be negative, got %v", cfg.Topology.RefreshInterval))
	}
	return errors.Join(errs...)
}

func (b *BurstsConfig) validate(collection time.Duration) []error {
	var errs []error
	// burst.MinPeriod, 10 ms, is also mlx5's hw_counters cache lifespan
	// (drivers/infiniband/core/sysfs.c hw_stat_device_show: the `lifespan` attribute, default
	// msecs_to_jiffies(10) in rdma_alloc_hw_stats_struct): a shorter period would mostly sample the
	// same cached values.
	if err := burst.ValidatePeriod(b.Period, collection); err != nil {
		errs = append(errs, err)
	}
	if err := capture.ValidateWindow(b.CaptureWindow); b.Capture != nil && err != nil {
		errs = append(errs, err)
	}
	if len(b.Shares) > maxBurstShares {
		errs = append(errs, fmt.Errorf("bursts.shares: at most %d, got %d", maxBurstShares, len(b.Shares)))
	}
	for i, sh := range b.Shares {
		if !(sh > 0 && sh <= 1) {
			errs = append(errs, fmt.Errorf("bursts.shares[%d]: must be above 0 and at most 1, got %v", i, sh))
		}
	}
	return errs
}

// rootPath returns the host's root, "/" by default.
func (cfg *Config) rootPath() string { return sysfs.HostRoot(cfg.RootPath) }

// sysRoot returns where sysfs is, given root_path.
func (cfg *Config) sysRoot() string { return filepath.Join(cfg.rootPath(), "sys") }

// selects reports whether the device (and, when port is not empty, the port) is to be read.
func (cfg *Config) selects(device, port string) bool {
	if port == "" {
		return cfg.Filter.Selects(device)
	}
	return cfg.Filter.Selects(device, device+"/"+port)
}

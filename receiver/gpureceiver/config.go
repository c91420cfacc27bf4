package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/scraper/scraperhelper"

	"github.com/otelcol-iclens/otelcol-iclens/internal/burst"
	"github.com/otelcol-iclens/otelcol-iclens/internal/capture"
	"github.com/otelcol-iclens/otelcol-iclens/internal/devicefilter"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver/internal/metadata"
)

// Source choices.
const (
	sourceAuto = "auto"
	sourceDCGM = "dcgm"
	sourceNVML = "nvml"
	// sourceAMDGPU reads AMD GPUs from amdgpu's sysfs tables (no library).
	sourceAMDGPU = "amdgpu"
)

// DCGM connection modes.
const (
	modeStandalone = "standalone"
	modeEmbedded   = "embedded"
)

// Config is the gpu receiver's configuration.
type Config struct {
	scraperhelper.ControllerConfig `mapstructure:",squash"`
	metadata.MetricsBuilderConfig  `mapstructure:",squash"`

	// Source selects the library: auto (DCGM, else NVML, else amdgpu's sysfs tables), dcgm, nvml
	// or amdgpu.
	Source string `mapstructure:"source"`

	// RetryInterval is how often the receiver tries again to load a GPU library it could not load
	// or reach, and rediscovers GPUs and profiling support while it has one.
	RetryInterval time.Duration `mapstructure:"retry_interval"`

	// RootPath is the host's filesystem root; the GPU's NUMA node is read from
	// RootPath/sys/bus/pci/devices/<bus id>/numa_node, AMD GPUs from RootPath/sys/class/drm.
	RootPath string `mapstructure:"root_path"`

	// Filter selects the GPUs (include: {devices: [...], match_type: strict|regexp|glob} and
	// exclude:, contrib's network scraper shape); a GPU is matched by its device name (gpu0), its
	// UUID and its PCI address (0000:3b:00.0). Excluded GPUs are never watched.
	devicefilter.Filter `mapstructure:",squash"`

	DCGM DCGMConfig `mapstructure:"dcgm"`

	// Recording records what the GPU library returned (recording.write) or replays a recording
	// instead of a library (recording.replay); see internal/recording/FORMAT.md.
	Recording recording.Settings `mapstructure:"recording"`

	// Bursts is the fast sampler of the GPUs' PCIe byte counters (README.md, "Microbursts"): off by
	// default.
	Bursts BurstsConfig `mapstructure:"bursts"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// DCGMConfig says how to reach DCGM.
type DCGMConfig struct {
	// Mode is standalone (connect to a running nv-hostengine, the default: one DCGM owner per node
	// is the only safe arrangement when dcgm-exporter or another tool also uses DCGM) or embedded
	// (the collector loads the hostengine itself; only where it is the node's sole DCGM user).
	Mode string `mapstructure:"mode"`
	// Endpoint of nv-hostengine in standalone mode: host:port (TCP, default localhost:5555),
	// unix:///path/to/socket, or a DCGM 4.5+ connection string tcp://host:port / vsock://cid:port.
	Endpoint string `mapstructure:"endpoint"`
	// SampleInterval is DCGM's update period for the rate fields (PCIe, NVLink, C2C bytes/s) and XIDs.
	// Every sample is integrated, so the byte totals do not depend on it; it sets how fine the
	// samples are, and what the hostengine spends taking them.
	SampleInterval time.Duration `mapstructure:"sample_interval"`
}

// BurstsConfig controls the fast sampler, which reads NVML's cumulative PCIe byte counters
// (NVML_FI_DEV_PCIE_COUNT_TX/RX_BYTES, fields 197/198) of every GPU, one nvmlDeviceGetFieldValues
// call per GPU, every Period on a thread of its own, and folds each GPU's and direction's bytes into
// gpu.burst.peak_rate per collection interval. NVML only: DCGM's PCIe fields are rates averaged over
// its sample period, and amdgpu's gpu_metrics has no PCIe byte counter (README.md, "Microbursts").
type BurstsConfig struct {
	// Period is the sampling period; 0 turns the sampler off. At least 10ms, shorter than
	// collection_interval.
	Period time.Duration `mapstructure:"period"`
	// Capture names a capture extension (extension/captureextension): the receiver keeps the
	// last CaptureWindow of what a recording would hold (the GPUs found, every poll's samples,
	// the fast sampler's passes) in memory, and the extension writes it as a recording when the
	// diagnosis raises a verdict or an operator asks from the view (README.md, "Capturing a
	// burst"). Unset: nothing is kept.
	Capture *component.ID `mapstructure:"capture"`
	// CaptureWindow is how much the ring keeps, at least one collection_interval.
	CaptureWindow time.Duration `mapstructure:"capture_window"`
}

// Validate checks the configuration.
func (cfg *Config) Validate() error {
	var errs []error
	switch cfg.Source {
	case sourceAuto, sourceDCGM, sourceNVML, sourceAMDGPU:
	default:
		errs = append(errs, fmt.Errorf("source: must be one of auto, dcgm, nvml, amdgpu, got %q", cfg.Source))
	}
	if cfg.RetryInterval <= 0 {
		errs = append(errs, fmt.Errorf("retry_interval: must be positive, got %v", cfg.RetryInterval))
	}
	errs = append(errs, sysfs.ValidateRootPath(cfg.RootPath), cfg.Filter.Validate())
	switch cfg.DCGM.Mode {
	case modeStandalone:
		if _, _, err := cfg.DCGM.initArgs(); err != nil {
			errs = append(errs, err)
		}
	case modeEmbedded:
	default:
		errs = append(errs, fmt.Errorf("dcgm.mode: must be standalone or embedded, got %q", cfg.DCGM.Mode))
	}
	errs = append(errs, burst.ValidatePeriod(cfg.Bursts.Period, cfg.CollectionInterval))
	if cfg.Bursts.Capture != nil {
		errs = append(errs, capture.ValidateWindow(cfg.Bursts.CaptureWindow))
	}
	if cfg.DCGM.SampleInterval < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("dcgm.sample_interval: must be at least 10ms, got %v", cfg.DCGM.SampleInterval))
	}
	if cfg.CollectionInterval > 0 && cfg.DCGM.SampleInterval > cfg.CollectionInterval {
		errs = append(errs, fmt.Errorf("dcgm.sample_interval: must not exceed collection_interval (%v), got %v", cfg.CollectionInterval, cfg.DCGM.SampleInterval))
	}
	return errors.Join(errs...)
}

// initArgs returns the arguments of go-dcgm's Init(Standalone, ...) for the endpoint: a DCGM 4.5
// connection string as it is, a unix socket as (path, "1"), host:port as (host:port, "0")
// (go-dcgm pkg/dcgm/admin.go standaloneConnectionArgs).
func (d DCGMConfig) initArgs() (string, string, error) {
	e := strings.TrimSpace(d.Endpoint)
	lower := strings.ToLower(e)
	switch {
	case e == "":
		return "", "", errors.New("dcgm.endpoint: must not be empty in standalone mode, got \"\"")
	case strings.HasPrefix(lower, "unix://"):
		path := e[len("unix://"):]
		if !filepath.IsAbs(path) {
			return "", "", fmt.Errorf("dcgm.endpoint: unix socket path must be absolute, got %q", e)
		}
		return path, "1", nil
	case strings.HasPrefix(lower, "tcp://"), strings.HasPrefix(lower, "vsock://"):
		return e, "", nil
	}
	if _, _, err := net.SplitHostPort(e); err != nil {
		return "", "", fmt.Errorf("dcgm.endpoint: must be host:port, unix:///path, tcp://host:port or vsock://cid:port, got %q", e)
	}
	return e, "0", nil
}

// selects reports whether the GPU is to be read: by its name, UUID or PCI address, those it has.
func (cfg *Config) selects(d gpuDevice) bool {
	names := make([]string, 0, 3)
	for _, n := range []string{d.name, d.uuid, d.busID} {
		if n != "" {
			names = append(names, n)
		}
	}
	return cfg.Filter.Selects(names...)
}

// rootPath returns root_path with its default.
func (cfg *Config) rootPath() string { return sysfs.HostRoot(cfg.RootPath) }

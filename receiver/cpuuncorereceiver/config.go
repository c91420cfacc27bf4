package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/scraper/scraperhelper"

	"github.com/otelcol-iclens/otelcol-iclens/internal/burst"
	"github.com/otelcol-iclens/otelcol-iclens/internal/capture"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver/internal/metadata"
)

// Granularity values.
const (
	GranularitySocket     = "socket"
	GranularityController = "controller"
	GranularityStack      = "stack"
	GranularityPort       = "port"
)

// Config is the receiver's configuration.
type Config struct {
	scraperhelper.ControllerConfig `mapstructure:",squash"`
	metadata.MetricsBuilderConfig  `mapstructure:",squash"`

	// RootPath is the host's filesystem root: sysfs is read under RootPath/sys and cpuinfo under
	// RootPath/proc, so that a container with the host's / mounted at /hostfs works (as in
	// contrib's hostmetrics receiver). Empty means "/". perf_event_open itself always talks to
	// the running kernel.
	RootPath string `mapstructure:"root_path"`

	// Memory configures host memory bandwidth (component cpu_memory).
	Memory DomainConfig `mapstructure:"memory"`
	// PCIe configures CPU-side PCIe bandwidth (component cpu_pcie).
	PCIe PCIeConfig `mapstructure:"pcie"`

	// Events replaces the built-in event table of a domain, for CPUs the receiver does not know
	// or to count something else. Every entry applies to every PMU instance its pmu matches.
	Events []EventConfig `mapstructure:"events"`

	// Recording records the raw readings (recording.write) or replays a recording instead of the
	// PMUs (recording.replay); see internal/recording/FORMAT.md.
	Recording recording.Settings `mapstructure:"recording"`

	// Bursts is the fast sampler of the memory and IIO groups (README.md, "Microbursts"): off by
	// default.
	Bursts BurstsConfig `mapstructure:"bursts"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// BurstsConfig controls the fast sampler, which reads the groups that carry interconnect.io's
// cpu_memory and cpu_pcie bytes (one read(2) per perf group) every Period on a goroutine of its
// own, and folds each series' bytes into cpuuncore.burst.peak_rate per collection interval. There
// are no shares of a line rate as in the rnic receiver: neither the uncore PMUs nor sysfs state a
// memory controller's or an IIO stack's line rate.
type BurstsConfig struct {
	// Period is the sampling period; 0 turns the sampler off. At least 10ms, shorter than
	// collection_interval.
	Period time.Duration `mapstructure:"period"`
	// Capture names a capture extension (extension/captureextension): the receiver keeps the
	// last CaptureWindow of its readings (every scrape's group reads and the fast sampler's
	// passes between them) in memory, and the extension writes them as a recording when the
	// diagnosis raises a verdict or an operator asks from the view (README.md, "Capturing a
	// burst"). Unset: nothing is kept.
	Capture *component.ID `mapstructure:"capture"`
	// CaptureWindow is how much the ring keeps, at least one collection_interval.
	CaptureWindow time.Duration `mapstructure:"capture_window"`
}

func (b BurstsConfig) validate(collection time.Duration) error {
	// Every pass is one read(2) per group (80 on a two-socket Sapphire Rapids with the IIO stacks).
	errs := []error{burst.ValidatePeriod(b.Period, collection)}
	if err := capture.ValidateWindow(b.CaptureWindow); b.Capture != nil && err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// DomainConfig switches a domain on and sets the level its series are reported at.
type DomainConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// Granularity: memory: socket (default) or controller; pcie: stack (default) or port.
	Granularity string `mapstructure:"granularity"`
}

// PCIeConfig configures the CPU PCIe domain.
type PCIeConfig struct {
	DomainConfig `mapstructure:",squash"`
	// SKXBandwidthOut measures transmit on Skylake-SP / Cascade Lake with the free-running
	// bw_out_port counters (kernel: 4 bytes a count) instead of the programmable IIO events Intel
	// PCM uses. No perfmon entry confirms bw_out's increment, and the kernel removed the same
	// counters on SPR as not counting a constant size (506f981ab40f), so it is off by default.
	SKXBandwidthOut bool `mapstructure:"skx_bw_out"`
}

// EventConfig is one event override.
type EventConfig struct {
	// Domain is memory or pcie.
	Domain string `mapstructure:"domain"`
	// PMU is the PMU name without its instance number (uncore_imc, amd_umc,
	// uncore_iio_free_running); it matches <pmu> and <pmu>_<N>.
	PMU string `mapstructure:"pmu"`
	// Event is a sysfs alias (cas_count_read) or a raw encoding in the PMU's format terms
	// (event=0x05,umask=0xcf).
	Event string `mapstructure:"event"`
	// Direction: read/write for memory, receive/transmit for pcie.
	Direction string `mapstructure:"direction"`
	// BytesPerCount is the size of one count; 0 takes the alias's .scale and .unit.
	BytesPerCount float64 `mapstructure:"bytes_per_count"`
}

var pmuNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// minCollectionInterval is the shortest collection_interval accepted. Every scrape reads every
// counter group (one read(2) each, a few hundred on a 2-socket Xeon with per-port IIO events) and
// emits a point per series; below 100 ms the receiver would spend its time in reads and the
// pipeline in points while a bandwidth over a few milliseconds is noise in perf's own
// time_enabled/time_running accounting (a multiplexed group rotates every
// perf_event_mux_interval_ms, PERF_CPU_HRTIMER = 1000/HZ ms by default, kernel/events/core.c).
// scraperhelper's ControllerConfig only refuses values <= 0.
const minCollectionInterval = 100 * time.Millisecond

// Validate checks the configuration.
func (cfg *Config) Validate() error {
	// collection_interval > 0 is ControllerConfig's check (its Validate runs too); the floor is ours.
	errs := []error{sysfs.ValidateRootPath(cfg.RootPath)}
	if cfg.CollectionInterval > 0 && cfg.CollectionInterval < minCollectionInterval {
		errs = append(errs, fmt.Errorf("collection_interval: must be at least %v (every scrape reads every counter group), got %v",
			minCollectionInterval, cfg.CollectionInterval))
	}
	if !cfg.Memory.Enabled && !cfg.PCIe.Enabled {
		errs = append(errs, fmt.Errorf("memory.enabled: memory and pcie are both disabled, nothing to collect, got %v", cfg.Memory.Enabled))
	}
	switch cfg.Memory.Granularity {
	case GranularitySocket, GranularityController:
	default:
		errs = append(errs, fmt.Errorf("memory.granularity: must be %q or %q, got %q", GranularitySocket, GranularityController, cfg.Memory.Granularity))
	}
	switch cfg.PCIe.Granularity {
	case GranularityStack, GranularityPort:
	default:
		errs = append(errs, fmt.Errorf("pcie.granularity: must be %q or %q, got %q", GranularityStack, GranularityPort, cfg.PCIe.Granularity))
	}
	for i, e := range cfg.Events {
		errs = append(errs, e.validate(fmt.Sprintf("events[%d]", i)))
	}
	errs = append(errs, cfg.Bursts.validate(cfg.CollectionInterval))
	return errors.Join(errs...)
}

// validate checks one event override; prefix is its key (events[2]).
func (e EventConfig) validate(prefix string) error {
	var errs []error
	switch e.Domain {
	case "memory":
		if e.Direction != dirRead && e.Direction != dirWrite {
			errs = append(errs, fmt.Errorf("%s.direction: memory events are read or write, got %q", prefix, e.Direction))
		}
	case "pcie":
		if e.Direction != dirReceive && e.Direction != dirTransmit {
			errs = append(errs, fmt.Errorf("%s.direction: pcie events are receive or transmit, got %q", prefix, e.Direction))
		}
	default:
		errs = append(errs, fmt.Errorf("%s.domain: must be memory or pcie, got %q", prefix, e.Domain))
	}
	if !pmuNameRE.MatchString(e.PMU) {
		errs = append(errs, fmt.Errorf("%s.pmu: must be a PMU name such as uncore_imc, got %q", prefix, e.PMU))
	}
	if strings.TrimSpace(e.Event) == "" {
		errs = append(errs, fmt.Errorf("%s.event: must not be empty, got %q", prefix, e.Event))
	}
	if e.BytesPerCount < 0 {
		errs = append(errs, fmt.Errorf("%s.bytes_per_count: must not be negative, got %v", prefix, e.BytesPerCount))
	}
	return errors.Join(errs...)
}

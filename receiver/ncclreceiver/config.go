package ncclreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/ncclreceiver"

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/scraper/scraperhelper"

	"github.com/otelcol-iclens/otelcol-iclens/receiver/ncclreceiver/internal/metadata"
)

// Config is the nccl receiver's configuration.
type Config struct {
	scraperhelper.ControllerConfig `mapstructure:",squash"`
	metadata.MetricsBuilderConfig  `mapstructure:",squash"`

	// RootPath is the host's filesystem root: the processes' environments are read from
	// RootPath/proc/<pid>/environ and the GPUs from RootPath/proc/driver/nvidia/gpus.
	RootPath string `mapstructure:"root_path"`

	Inspector InspectorConfig `mapstructure:"inspector"`
	RAS       RASConfig       `mapstructure:"ras"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// InspectorConfig says where the NCCL Inspector writes and how the files are tailed.
type InspectorConfig struct {
	// DumpDir is the jobs' NCCL_INSPECTOR_DUMP_DIR; every <hostname>-pid<PID>.log in it is read.
	// Empty turns the Inspector source off.
	DumpDir string `mapstructure:"dump_dir"`
	// LocalHostOnly reads only this host's files (<hostname>-pid*.log, the hostname as
	// gethostname() gives it to the collector and to NCCL alike): set it when the job's nodes share
	// one dump directory (NCCL_INSPECTOR_DUMP_DIR on a shared file system), so that each node's
	// collector reports its own node and no record is reported by every node.
	LocalHostOnly bool `mapstructure:"local_host_only"`
	// PollInterval is how often the directory is looked at for new lines and new files.
	PollInterval time.Duration `mapstructure:"poll_interval"`
	// Storage is a storage extension (file_storage) that keeps each file's offset across
	// restarts, so that no record is read twice or skipped; without one a restart reads every
	// file again from its start.
	Storage *component.ID `mapstructure:"storage"`
	// MaxCommunicators bounds the communicators kept per receiver; the records of any further
	// communicator are counted (outcome=over_limit) and dropped.
	MaxCommunicators int `mapstructure:"max_communicators"`
	// StaleAfter drops the series of a communicator that took no record for this long (the job
	// ended or the communicator was destroyed).
	StaleAfter time.Duration `mapstructure:"stale_after"`
}

// RASConfig says where the NCCL RAS service answers.
type RASConfig struct {
	// Endpoint is the RAS client socket (NCCL_RAS_ADDR; localhost:28028 by default,
	// src/ras/ras_internal.h NCCL_RAS_CLIENT_PORT). Empty turns the RAS source off.
	Endpoint string `mapstructure:"endpoint"`
	// Timeout bounds one STATUS query, connect to last byte. RAS itself waits up to 5 s for its
	// peers (RAS_COLLECTIVE_LEG_TIMEOUT_SEC) before it answers.
	Timeout time.Duration `mapstructure:"timeout"`
}

// Validate checks the configuration.
func (cfg *Config) Validate() error {
	var errs []error
	if !filepath.IsAbs(cfg.RootPath) {
		errs = append(errs, fmt.Errorf("root_path: must be an absolute path, got %q", cfg.RootPath))
	}
	if cfg.Inspector.DumpDir != "" && !filepath.IsAbs(cfg.Inspector.DumpDir) {
		errs = append(errs, fmt.Errorf("inspector.dump_dir: must be an absolute path, got %q", cfg.Inspector.DumpDir))
	}
	if cfg.Inspector.DumpDir != "" && cfg.Inspector.PollInterval <= 0 {
		errs = append(errs, fmt.Errorf("inspector.poll_interval: must be positive, got %v", cfg.Inspector.PollInterval))
	}
	if cfg.Inspector.MaxCommunicators <= 0 {
		errs = append(errs, fmt.Errorf("inspector.max_communicators: must be positive, got %d", cfg.Inspector.MaxCommunicators))
	}
	if cfg.Inspector.StaleAfter < 0 {
		errs = append(errs, fmt.Errorf("inspector.stale_after: must not be negative, got %v", cfg.Inspector.StaleAfter))
	}
	if cfg.RAS.Endpoint != "" {
		if _, _, err := net.SplitHostPort(cfg.RAS.Endpoint); err != nil {
			errs = append(errs, fmt.Errorf("ras.endpoint: must be host:port, got %q", cfg.RAS.Endpoint))
		}
		if cfg.RAS.Timeout <= 0 {
			errs = append(errs, fmt.Errorf("ras.timeout: must be positive, got %v", cfg.RAS.Timeout))
		}
		if cfg.RAS.Timeout >= cfg.CollectionInterval && cfg.CollectionInterval > 0 {
			errs = append(errs, fmt.Errorf("ras.timeout: must be shorter than collection_interval (%v), got %v", cfg.CollectionInterval, cfg.RAS.Timeout))
		}
	}
	return errors.Join(errs...)
}

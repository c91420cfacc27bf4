package ownerreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/ownerreceiver"

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/scraper/scraperhelper"

	"github.com/otelcol-iclens/otelcol-iclens/internal/owner"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/ownerreceiver/internal/metadata"
)

// Config is the owner receiver's configuration: the scrape that emits the info series, and the
// resolver's sources and schedule (internal/owner.Config: refresh_interval, inventory_interval,
// kubernetes, slurm, process, static).
type Config struct {
	scraperhelper.ControllerConfig `mapstructure:",squash"`
	metadata.MetricsBuilderConfig  `mapstructure:",squash"`

	// RootPath is the host's filesystem root: sysfs (the node's GPUs, NICs and root ports) is read
	// under RootPath/sys and the NVIDIA driver's procfs and the processes under RootPath/proc.
	// The kubernetes socket, the Slurm mapping directory and the static file are paths as the
	// collector sees them, not below RootPath.
	RootPath string `mapstructure:"root_path"`

	owner.Config `mapstructure:",squash"`

	// OwnerResource puts the owner on the resource, for OTLP backends that model pods and jobs
	// as entities: one resource per pod (k8s.namespace.name, k8s.pod.name, which contrib's
	// k8sattributes processor associates with the pod to add its labels) or job (job.id), with
	// the interconnect.owner points of its devices; shared and node-owned devices stay on the
	// receiver's own resource. Off: every point on one resource, the owner on the point.
	OwnerResource bool `mapstructure:"owner_resource"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Validate checks the configuration; messages name the key.
func (c *Config) Validate() error {
	var errs []error
	if err := sysfs.ValidateRootPath(c.RootPath); err != nil {
		errs = append(errs, err)
	}
	if err := c.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.RefreshInterval > c.CollectionInterval {
		// An owner change must show in the scrape after the refresh that saw it, within one
		// collection interval, not a cache period later.
		errs = append(errs, fmt.Errorf("refresh_interval: must be at most collection_interval (%v), got %v", c.CollectionInterval, c.RefreshInterval))
	}
	if !c.Kubernetes.Enabled && !c.Slurm.Enabled && !c.Scontrol.Enabled && !c.Process.Enabled && !c.Static.Enabled {
		errs = append(errs, errors.New("kubernetes, slurm, scontrol, process, static: turn at least one source on (enabled: true), got none"))
	}
	return errors.Join(errs...)
}

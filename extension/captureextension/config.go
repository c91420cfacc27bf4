package captureextension // import "github.com/otelcol-iclens/otelcol-iclens/extension/captureextension"

import (
	"errors"
	"fmt"
	"time"
)

// Config of the capture extension.
type Config struct {
	// Directory is where the recordings go, created at the first capture (mode 0700: they hold
	// the node's readings). Each trigger writes one file per registered ring,
	// <UTC time>-<receiver id>.jsonl.gz.
	Directory string `mapstructure:"directory"`
	// MaxFiles is how many recordings the directory keeps: after a write the oldest beyond it
	// are removed (only the extension's own, by their names).
	MaxFiles int `mapstructure:"max_files"`
	// MinInterval is the least time between two triggers: one within it of the previous is
	// refused, and said, so that a verdict that comes and goes cannot fill the disk.
	MinInterval time.Duration `mapstructure:"min_interval"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Validate checks the directory, the bound and the interval.
func (c *Config) Validate() error {
	var errs []error
	if c.Directory == "" {
		errs = append(errs, errors.New(`directory: must name where the recordings go, got ""`))
	}
	if c.MaxFiles < 1 {
		errs = append(errs, fmt.Errorf("max_files: must be at least 1, got %d", c.MaxFiles))
	}
	if c.MinInterval < 0 {
		errs = append(errs, fmt.Errorf("min_interval: must not be negative, got %s", c.MinInterval))
	}
	return errors.Join(errs...)
}

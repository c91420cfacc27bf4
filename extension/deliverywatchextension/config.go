package deliverywatchextension // import "github.com/otelcol-iclens/otelcol-iclens/extension/deliverywatchextension"

import (
	"errors"
	"fmt"
	"net/url"
	"time"
)

// Config of the delivery_watch extension.
type Config struct {
	// Endpoint is the collector's own telemetry in Prometheus format: the URL of the pull reader
	// of service.telemetry.metrics (http://127.0.0.1:8888/metrics by default).
	Endpoint string `mapstructure:"endpoint"`
	// CheckInterval is how often the telemetry is read.
	CheckInterval time.Duration `mapstructure:"check_interval"`
	// GrowingChecks is how many checks in a row an exporter's queue must grow before the
	// extension says its sends are failing: a healthy queue rises and falls between sends.
	GrowingChecks int `mapstructure:"growing_checks"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Validate checks the endpoint and the intervals.
func (c *Config) Validate() error {
	var errs []error
	u, err := url.Parse(c.Endpoint)
	switch {
	case c.Endpoint == "":
		errs = append(errs, errors.New("endpoint: must name the collector's own telemetry (http://127.0.0.1:8888/metrics)"))
	case err != nil:
		errs = append(errs, fmt.Errorf("endpoint: %w", err))
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		errs = append(errs, fmt.Errorf("endpoint: %q is not an http(s) URL", c.Endpoint))
	}
	if c.CheckInterval <= 0 {
		errs = append(errs, fmt.Errorf("check_interval: must be positive, got %s", c.CheckInterval))
	}
	if c.GrowingChecks < 1 {
		errs = append(errs, fmt.Errorf("growing_checks: must be at least 1, got %d", c.GrowingChecks))
	}
	return errors.Join(errs...)
}

package deliverywatchextension // import "github.com/otelcol-iclens/otelcol-iclens/extension/deliverywatchextension"

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
)

// Config of the delivery_watch extension.
type Config struct {
	// ClientConfig reads the collector's own telemetry in Prometheus format: endpoint is the URL
	// of the pull reader of service.telemetry.metrics (http://127.0.0.1:8888/metrics by default);
	// timeout, TLS and headers as for any HTTP client of the collector. A timeout of 0 or longer
	// than check_interval is check_interval: a read never overlaps the next.
	confighttp.ClientConfig `mapstructure:",squash"`
	// CheckInterval is how often the telemetry is read.
	CheckInterval time.Duration `mapstructure:"check_interval"`
	// GrowingChecks is how many checks in a row an exporter's queue must grow before the
	// extension says its sends are failing: a healthy queue rises and falls between sends.
	GrowingChecks int `mapstructure:"growing_checks"`
	// Storage names a storage extension (file_storage) that keeps each exporter's state across a
	// restart, so that an outage the collector was restarted in is said once, with its whole
	// length, and its recovery is said by the process that sees it. Without it the state starts
	// over at each start.
	Storage *component.ID `mapstructure:"storage"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Validate checks the endpoint and the intervals.
func (c *Config) Validate() error {
	var errs []error
	u, err := url.Parse(c.Endpoint)
	switch {
	case c.Endpoint == "":
		errs = append(errs, errors.New("endpoint: must name the collector's own telemetry, got \"\" (http://127.0.0.1:8888/metrics)"))
	case err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		errs = append(errs, fmt.Errorf("endpoint: must be an http(s) URL, got %q", c.Endpoint))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout: must not be negative, got %s", c.Timeout))
	}
	if c.CheckInterval <= 0 {
		errs = append(errs, fmt.Errorf("check_interval: must be positive, got %s", c.CheckInterval))
	}
	if c.GrowingChecks < 1 {
		errs = append(errs, fmt.Errorf("growing_checks: must be at least 1, got %d", c.GrowingChecks))
	}
	return errors.Join(errs...)
}

// readTimeout is the HTTP client's timeout: the configured one, at most check_interval.
func (c *Config) readTimeout() time.Duration {
	if c.Timeout <= 0 || c.Timeout > c.CheckInterval {
		return c.CheckInterval
	}
	return c.Timeout
}

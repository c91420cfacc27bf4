package lensviewexporter // import "github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter"

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
)

// DefaultEndpoint is where the view listens unless configured otherwise: loopback only, one port
// above the distribution's Prometheus exporter (9464).
const DefaultEndpoint = "127.0.0.1:9465"

// Config of the lensview exporter.
type Config struct {
	// ServerConfig is the HTTP server (endpoint, TLS, ...); endpoint defaults to 127.0.0.1:9465.
	confighttp.ServerConfig `mapstructure:",squash"`

	// Window is how far back the view keeps every series (a ring per series).
	Window time.Duration `mapstructure:"window"`
	// Resolution is the shortest step between two kept points of a series: rates are taken over
	// at least this long, so a fast collection interval does not shorten the window the ring holds.
	Resolution time.Duration `mapstructure:"resolution"`
	// NodeTimeout forgets a node (host.name) that sent nothing for this long; a series of a node
	// that still reports is forgotten once its newest point is older than Window.
	NodeTimeout time.Duration `mapstructure:"node_timeout"`
	// MaxNodes and MaxSeriesPerNode bound the memory whatever the pipeline sends: further nodes or
	// series are not kept (logged once).
	MaxNodes         int `mapstructure:"max_nodes"`
	MaxSeriesPerNode int `mapstructure:"max_series_per_node"`
	// Refresh is how often the page asks for new points.
	Refresh time.Duration `mapstructure:"refresh"`
	// MaxClockSkew refuses points stamped further than this from the collector's clock, ahead or
	// behind (counted, said once): one point stamped years ahead would freeze a node's chart.
	MaxClockSkew time.Duration `mapstructure:"max_clock_skew"`
	// MaxConnections bounds the connections the view serves at once, so that it never takes the
	// file descriptors the receivers read the hardware with; further ones wait in the kernel's
	// backlog.
	MaxConnections int `mapstructure:"max_connections"`
	// Capture names a capture extension (extension/captureextension): the page gets a Capture
	// button, which asks the extension to write the rings the receivers keep (bursts.capture) as
	// recordings (POST /api/capture; README.md, "Capturing a burst"). Unset: the view stays
	// read-only.
	Capture *component.ID `mapstructure:"capture"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

func createDefaultConfig() component.Config {
	srv := confighttp.NewDefaultServerConfig()
	srv.NetAddr.Endpoint = DefaultEndpoint
	// A client has this long to send its request's headers (net/http Server.ReadHeaderTimeout);
	// confighttp's default is a minute, during which a half-open connection holds a descriptor.
	srv.ReadHeaderTimeout = 5 * time.Second
	return &Config{
		ServerConfig:     srv,
		Window:           30 * time.Minute,
		Resolution:       time.Second,
		NodeTimeout:      5 * time.Minute,
		MaxNodes:         256,
		MaxSeriesPerNode: 512,
		Refresh:          2 * time.Second,
		MaxClockSkew:     10 * time.Minute,
		MaxConnections:   64,
	}
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	if c.NetAddr.Endpoint == "" {
		errs = append(errs, errors.New("endpoint: must be set (host:port, e.g. 127.0.0.1:9465)"))
	}
	if c.Resolution <= 0 {
		errs = append(errs, fmt.Errorf("resolution: must be positive, got %s", c.Resolution))
	}
	if c.Window < c.Resolution || c.Window <= 0 {
		errs = append(errs, fmt.Errorf("window: must be at least resolution (%s), got %s", c.Resolution, c.Window))
	} else if c.Resolution > 0 && c.Window/c.Resolution > maxPointsPerSeries {
		errs = append(errs, fmt.Errorf("window: %s at resolution %s is %d points per series, more than %d; raise resolution",
			c.Window, c.Resolution, c.Window/c.Resolution, maxPointsPerSeries))
	}
	if c.NodeTimeout <= 0 {
		errs = append(errs, fmt.Errorf("node_timeout: must be positive, got %s", c.NodeTimeout))
	}
	if c.MaxNodes <= 0 {
		errs = append(errs, fmt.Errorf("max_nodes: must be positive, got %d", c.MaxNodes))
	}
	if c.MaxSeriesPerNode <= 0 {
		errs = append(errs, fmt.Errorf("max_series_per_node: must be positive, got %d", c.MaxSeriesPerNode))
	}
	if c.MaxClockSkew < 0 {
		errs = append(errs, fmt.Errorf("max_clock_skew: must not be negative, got %s", c.MaxClockSkew))
	}
	if c.MaxConnections <= 0 {
		errs = append(errs, fmt.Errorf("max_connections: must be positive, got %d", c.MaxConnections))
	}
	if c.ReadHeaderTimeout <= 0 {
		errs = append(errs, fmt.Errorf("read_header_timeout: must be positive (a client that never sends its headers holds a connection), got %s", c.ReadHeaderTimeout))
	}
	if c.Refresh < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("refresh: must be at least 100ms, got %s", c.Refresh))
	}
	return errors.Join(errs...)
}

// maxPointsPerSeries caps a ring (a day at one point a second, 1.4 MB a series).
const maxPointsPerSeries = 86400

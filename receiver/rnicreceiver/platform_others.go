//go:build !linux

package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/scraper"
)

// newMetricsScraper returns a scraper that says once, at start, that RDMA ports are read from
// Linux's sysfs only, and then stays quiet.
func newMetricsScraper(_ *Config, set receiver.Settings) (scraper.Metrics, error) {
	start := func(context.Context, component.Host) error {
		set.Logger.Info("unsupported platform: the rnic receiver reads Linux's /sys/class/infiniband; it collects nothing here")
		return nil
	}
	scrape := func(context.Context) (pmetric.Metrics, error) { return pmetric.NewMetrics(), nil }
	return scraper.NewMetrics(scrape, scraper.WithStart(start))
}

// maxKeptFiles is not used off Linux.
func maxKeptFiles() int { return 0 }

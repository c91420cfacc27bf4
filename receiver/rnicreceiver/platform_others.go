//go:build !linux

package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/scraper"
)

// newMetricsScraper returns, for a replay (recording.replay), the receiver's scraper: the
// recording's tree is plain files, read anywhere (internal/sysfs read_others.go), and the ethtool
// statistics come from the recording. Without one, a scraper that says once, at start, that RDMA
// ports are read from Linux's sysfs only, and then stays quiet.
func newMetricsScraper(cfg *Config, set receiver.Settings) (scraper.Metrics, error) {
	if cfg.Recording.Replay != "" {
		s := newScraper(cfg, set)
		return scraper.NewMetrics(s.scrape, scraper.WithStart(s.start), scraper.WithShutdown(s.shutdown))
	}
	start := func(context.Context, component.Host) error {
		set.Logger.Info("unsupported platform: the rnic receiver reads Linux's /sys/class/infiniband; it collects nothing here (a replay still works)")
		return nil
	}
	scrape := func(context.Context) (pmetric.Metrics, error) { return pmetric.NewMetrics(), nil }
	return scraper.NewMetrics(scrape, scraper.WithStart(start))
}

// maxKeptFiles: no descriptor limit to respect off Linux beyond the replayed tree's size.
func maxKeptFiles() int { return 1024 }

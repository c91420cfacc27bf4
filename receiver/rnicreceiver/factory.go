package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scraperhelper"

	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver/internal/metadata"
)

// defaultCollectionInterval keeps the cost on the NIC low: every counters/ read is a firmware
// command on mlx5 (research/rnic.md §1.4).
const defaultCollectionInterval = 10 * time.Second

// defaultSlowInterval is how often error and transport counters are read (Config.SlowInterval):
// two points in any 20 s window, so that rate() over a dashboard's shortest window still has data,
// while at a 1 s interval a RoCE port costs about 17 file reads per scrape instead of 47. At the
// default collection interval it changes nothing.
const defaultSlowInterval = 10 * time.Second

// defaultReadTimeout is what one device's reads may take in one scrape (Config.ReadTimeout): a
// healthy mlx5 port answers its 17 to 47 files in milliseconds, each a firmware command; a second
// and more means the firmware is not answering.
const defaultReadTimeout = 2 * time.Second

// defaultTopologyRefresh re-reads the PCI tree now and then: a link can retrain and modules load.
const defaultTopologyRefresh = 5 * time.Minute

// NewFactory creates a factory for the rnic receiver.
func NewFactory() receiver.Factory {
	return receiver.NewFactory(
		metadata.Type,
		createDefaultConfig,
		receiver.WithMetrics(createMetricsReceiver, metadata.MetricsStability),
	)
}

func createDefaultConfig() component.Config {
	cfg := scraperhelper.NewDefaultControllerConfig()
	cfg.CollectionInterval = defaultCollectionInterval
	return &Config{
		ControllerConfig:     cfg,
		MetricsBuilderConfig: metadata.DefaultMetricsBuilderConfig(),
		RootPath:             "/",
		Ethtool:              EthtoolConfig{Enabled: true},
		Topology:             TopologyConfig{Enabled: true, RefreshInterval: defaultTopologyRefresh},
		SlowInterval:         defaultSlowInterval,
		ReadTimeout:          defaultReadTimeout,
	}
}

func createMetricsReceiver(
	_ context.Context,
	set receiver.Settings,
	baseCfg component.Config,
	next consumer.Metrics,
) (receiver.Metrics, error) {
	cfg := baseCfg.(*Config)
	s := newScraper(cfg, set)
	sc, err := scraper.NewMetrics(s.scrape, scraper.WithStart(s.start), scraper.WithShutdown(s.shutdown))
	if err != nil {
		return nil, err
	}
	return scraperhelper.NewMetricsController(
		&cfg.ControllerConfig, set, next,
		scraperhelper.AddMetricsScraper(metadata.Type, sc),
	)
}

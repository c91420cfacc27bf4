package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/scraper/scraperhelper"

	"github.com/otelcol-iclens/otelcol-iclens/internal/capture"
	"github.com/otelcol-iclens/otelcol-iclens/internal/devicefilter"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver/internal/metadata"
)

// defaultCollectionInterval keeps the cost on the NIC low: on mlx5 every counters/ read is a
// firmware command (drivers/infiniband/hw/mlx5/mad.c process_pma_cmd).
const defaultCollectionInterval = 10 * time.Second

// defaultSlowInterval is how often error and transport counters are read (Config.SlowInterval):
// two points in any 20 s window, so that rate() over a dashboard's shortest window still has data.
const defaultSlowInterval = 10 * time.Second

// defaultReadTimeout is what one device's reads may take in one scrape (Config.ReadTimeout): a
// healthy port answers in milliseconds; a second and more means the firmware is not answering.
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
		Filter:               devicefilter.Default(),
		Topology:             TopologyConfig{Enabled: true, RefreshInterval: defaultTopologyRefresh},
		SlowInterval:         defaultSlowInterval,
		ReadTimeout:          defaultReadTimeout,
		Bursts:               BurstsConfig{Shares: []float64{0.9}, CaptureWindow: capture.DefaultWindow},
	}
}

func createMetricsReceiver(
	_ context.Context,
	set receiver.Settings,
	baseCfg component.Config,
	next consumer.Metrics,
) (receiver.Metrics, error) {
	cfg := baseCfg.(*Config)
	sc, err := newMetricsScraper(cfg, set)
	if err != nil {
		return nil, err
	}
	return scraperhelper.NewMetricsController(
		&cfg.ControllerConfig, set, next,
		scraperhelper.AddMetricsScraper(metadata.Type, sc),
	)
}

package ownerreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/ownerreceiver"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scraperhelper"

	"github.com/otelcol-iclens/otelcol-iclens/internal/owner"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/ownerreceiver/internal/metadata"
)

// defaultCollectionInterval matches the rnic receiver's: the info series changes only at job
// boundaries, and the resolver refreshes twice per interval (owner.DefaultConfig, 5 s).
const defaultCollectionInterval = 10 * time.Second

// NewFactory creates a factory for the owner receiver.
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
		Config:               owner.DefaultConfig(),
	}
}

func createMetricsReceiver(
	_ context.Context,
	set receiver.Settings,
	baseCfg component.Config,
	next consumer.Metrics,
) (receiver.Metrics, error) {
	cfg := baseCfg.(*Config)
	s := newOwnerScraper(cfg, set)
	sc, err := scraper.NewMetrics(s.scrape, scraper.WithStart(s.start), scraper.WithShutdown(s.shutdown))
	if err != nil {
		return nil, err
	}
	return scraperhelper.NewMetricsController(
		&cfg.ControllerConfig, set, next,
		scraperhelper.AddMetricsScraper(metadata.Type, sc),
	)
}

package ncclreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/ncclreceiver"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scraperhelper"

	"github.com/otelcol-iclens/otelcol-iclens/receiver/ncclreceiver/internal/metadata"
)

const (
	// defaultCollectionInterval matches the Inspector's own Prometheus mode, which dumps every
	// 30 s at the least (plugins/profiler/inspector/README.md), halved so that a dump is never
	// more than half an interval old.
	defaultCollectionInterval = 15 * time.Second
	defaultPollInterval       = time.Second
	defaultMaxCommunicators   = 256
	defaultStaleAfter         = 15 * time.Minute
	defaultRASEndpoint        = "localhost:28028"
	// defaultRASTimeout: RAS waits RAS_COLLECTIVE_LEG_TIMEOUT_SEC (5 s) per leg for its peers
	// before it answers (src/ras/ras_internal.h); the ncclras client adds as much again
	// (RAS_COLLECTIVE_EXTRA_TIMEOUT_SEC) plus 1 s.
	defaultRASTimeout = 11 * time.Second
)

// NewFactory creates a factory for the nccl receiver.
func NewFactory() receiver.Factory {
	return receiver.NewFactory(
		metadata.Type,
		createDefaultConfig,
		receiver.WithMetrics(createMetricsReceiver, metadata.MetricsStability),
		receiver.WithLogs(createLogsReceiver, metadata.LogsStability),
	)
}

func createDefaultConfig() component.Config {
	cfg := scraperhelper.NewDefaultControllerConfig()
	cfg.CollectionInterval = defaultCollectionInterval
	return &Config{
		ControllerConfig:     cfg,
		MetricsBuilderConfig: metadata.DefaultMetricsBuilderConfig(),
		RootPath:             "/",
		Inspector: InspectorConfig{
			PollInterval:     defaultPollInterval,
			MaxCommunicators: defaultMaxCommunicators,
			StaleAfter:       defaultStaleAfter,
		},
		RAS: RASConfig{Endpoint: defaultRASEndpoint, Timeout: defaultRASTimeout},
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

// createLogsReceiver makes the receiver of a logs pipeline: RAS's rank state changes as log
// records (logs.go), at the same collection interval.
func createLogsReceiver(
	_ context.Context,
	set receiver.Settings,
	baseCfg component.Config,
	next consumer.Logs,
) (receiver.Logs, error) {
	return newLogsController(baseCfg.(*Config), set, next)
}

// newLogsController runs the RAS logs scraper in the collector's scraper controller; options
// are the controller's (a test's ticker).
func newLogsController(cfg *Config, set receiver.Settings, next consumer.Logs, options ...scraperhelper.ControllerOption) (receiver.Logs, error) {
	s := newRASLogsScraper(cfg, set)
	sc, err := scraper.NewLogs(s.scrape)
	if err != nil {
		return nil, err
	}
	f := scraper.NewFactory(metadata.Type, nil, scraper.WithLogs(func(context.Context, scraper.Settings, component.Config) (scraper.Logs, error) {
		return sc, nil
	}, metadata.LogsStability))
	return scraperhelper.NewLogsController(&cfg.ControllerConfig, set, next,
		append([]scraperhelper.ControllerOption{scraperhelper.AddFactoryWithConfig(f, nil)}, options...)...)
}

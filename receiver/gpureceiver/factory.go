package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scraperhelper"

	"github.com/otelcol-iclens/otelcol-iclens/internal/capture"
	"github.com/otelcol-iclens/otelcol-iclens/internal/devicefilter"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver/internal/metadata"
)

const (
	defaultCollectionInterval = 10 * time.Second
	// defaultSampleInterval: DCGM takes a rate sample every second; GCP's receiver uses 100 ms,
	// dcgm-exporter the collection interval. Each sample averages the whole second, so the
	// integrated bytes are exact either way; 1 s keeps the hostengine's and our work small.
	defaultSampleInterval = time.Second
	// defaultRetryInterval: how often a missing library or hostengine is looked for again.
	defaultRetryInterval = time.Minute
	defaultEndpoint      = "localhost:5555"
)

// NewFactory creates a factory for the gpu receiver.
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
		Source:               sourceAuto,
		RetryInterval:        defaultRetryInterval,
		RootPath:             "/",
		Filter:               devicefilter.Default(),
		DCGM: DCGMConfig{
			Mode:           modeStandalone,
			Endpoint:       defaultEndpoint,
			SampleInterval: defaultSampleInterval,
		},
		Bursts: BurstsConfig{CaptureWindow: capture.DefaultWindow},
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

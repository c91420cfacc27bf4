package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scraperhelper"

	"github.com/otelcol-iclens/otelcol-iclens/internal/capture"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver/internal/metadata"
)

// defaultInterval is short because SKX IIO free-running counters are 36 bits wide: at 4 bytes a
// count they hold 256 GiB, which a PCIe Gen3 x16 port moves in about 17 s; every read folds the
// hardware counter into the kernel's 64-bit count (uncore.c uncore_perf_event_update).
const defaultInterval = 5 * time.Second

// errUnsupportedPlatform is what the live source answers where there is no perf_event_open
// (factory_others.go).
var errUnsupportedPlatform = errors.New("unsupported platform")

// NewFactory creates the cpuuncore receiver factory.
func NewFactory() receiver.Factory {
	return receiver.NewFactory(
		metadata.Type,
		createDefaultConfig,
		receiver.WithMetrics(createMetricsReceiver, metadata.MetricsStability),
	)
}

func createDefaultConfig() component.Config {
	cfg := scraperhelper.NewDefaultControllerConfig()
	cfg.CollectionInterval = defaultInterval
	return &Config{
		ControllerConfig:     cfg,
		MetricsBuilderConfig: metadata.DefaultMetricsBuilderConfig(),
		RootPath:             "/",
		Memory:               DomainConfig{Enabled: true, Granularity: GranularitySocket},
		PCIe:                 PCIeConfig{DomainConfig: DomainConfig{Enabled: true, Granularity: GranularityStack}},
		Bursts:               BurstsConfig{CaptureWindow: capture.DefaultWindow},
	}
}

// createMetricsReceiver builds the one scraper: whether it reads the kernel live, records it or
// replays a recording is chosen in Start (recording.go openSeam), so that validating or creating
// a configuration opens no file.
func createMetricsReceiver(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Metrics) (receiver.Metrics, error) {
	c := cfg.(*Config)
	s := newScraper(c, set, liveOpener)
	sc, err := scraper.NewMetrics(s.scrape, scraper.WithStart(s.start), scraper.WithShutdown(s.shutdown))
	if err != nil {
		return nil, err
	}
	return scraperhelper.NewMetricsController(&c.ControllerConfig, set, next, scraperhelper.AddMetricsScraper(metadata.Type, sc))
}

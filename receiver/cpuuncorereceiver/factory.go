package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scraperhelper"
	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/internal/perf"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver/internal/metadata"
)

// defaultInterval is short because SKX IIO free-running counters are 36 bits wide: at 4 bytes a
// count they hold 256 GiB, which a PCIe Gen3 x16 port moves in about 17 s; every read folds the
// hardware counter into the kernel's 64-bit count (uncore.c uncore_perf_event_update).
const defaultInterval = 5 * time.Second

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
	}
}

func createMetricsReceiver(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Metrics) (receiver.Metrics, error) {
	c := cfg.(*Config)
	if c.Recording.Write == "" && c.Recording.Replay == "" {
		s := newScraper(c, set, &perf.Syscalls{})
		sc, err := scraper.NewMetrics(s.scrape, scraper.WithStart(s.start), scraper.WithShutdown(s.shutdown))
		if err != nil {
			return nil, err
		}
		return scraperhelper.NewMetricsController(&c.ControllerConfig, set, next, scraperhelper.AddMetricsScraper(metadata.Type, sc))
	}
	sc, err := newRecordingScraper(c, set)
	if err != nil {
		return nil, err
	}
	return scraperhelper.NewMetricsController(&c.ControllerConfig, set, next, scraperhelper.AddMetricsScraper(metadata.Type, sc))
}

// newRecordingScraper wraps the scraper for recording or replay: the files and the replayed tree
// are set up at start, so that validating a configuration creates nothing.
func newRecordingScraper(c *Config, set receiver.Settings) (scraper.Metrics, error) {
	var (
		s  *uncoreScraper
		sm *seams
	)
	start := func(ctx context.Context, host component.Host) error {
		var err error
		if sm, err = openSeams(c); err != nil {
			return err
		}
		run := *c
		run.RootPath = sm.root
		s = newScraper(&run, set, sm.opener)
		return s.start(ctx, host)
	}
	scrape := func(ctx context.Context) (pmetric.Metrics, error) {
		md, err := s.scrape(ctx)
		if sm.afterScrape != nil {
			if werr := sm.afterScrape(); werr != nil {
				set.Logger.Warn("cannot write the recording", zap.Error(werr))
			}
		}
		return md, err
	}
	shutdown := func(ctx context.Context) error {
		if s == nil {
			return nil
		}
		err := s.shutdown(ctx)
		if sm.close != nil {
			err = errors.Join(err, sm.close())
		}
		return err
	}
	return scraper.NewMetrics(scrape, scraper.WithStart(start), scraper.WithShutdown(shutdown))
}

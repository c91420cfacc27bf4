package lensviewexporter // import "github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter"

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter/internal/metadata"
)

// NewFactory returns the factory of the lensview exporter.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(
		metadata.Type,
		createDefaultConfig,
		exporter.WithMetrics(createMetrics, metadata.MetricsStability),
		exporter.WithLogs(createLogs, metadata.LogsStability),
	)
}

// views shares one view between the metrics and the logs exporter of one configuration (as the
// OTLP receiver shares its server between signals): one store, one port.
var views = struct {
	sync.Mutex
	m map[*Config]*sharedView
}{m: map[*Config]*sharedView{}}

type sharedView struct {
	*viewExporter
	refs int
}

func acquire(cfg *Config, set exporter.Settings) (*sharedView, error) {
	views.Lock()
	defer views.Unlock()
	v := views.m[cfg]
	if v == nil {
		ve, err := newViewExporter(cfg, set)
		if err != nil {
			return nil, err
		}
		v = &sharedView{viewExporter: ve}
		views.m[cfg] = v
	}
	v.refs++
	return v, nil
}

// release shuts the view down when the last of its exporters does.
func (v *sharedView) release(ctx context.Context) error {
	views.Lock()
	v.refs--
	last := v.refs == 0
	if last {
		delete(views.m, v.cfg)
	}
	views.Unlock()
	if !last {
		return nil
	}
	return v.Shutdown(ctx)
}

func createMetrics(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Metrics, error) {
	v, err := acquire(cfg.(*Config), set)
	if err != nil {
		return nil, err
	}
	return exporterhelper.NewMetrics(ctx, set, cfg, v.consumeMetrics,
		exporterhelper.WithStart(v.Start),
		exporterhelper.WithShutdown(v.release),
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		exporterhelper.WithTimeout(exporterhelper.TimeoutConfig{Timeout: 0}),
	)
}

func createLogs(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Logs, error) {
	v, err := acquire(cfg.(*Config), set)
	if err != nil {
		return nil, err
	}
	return exporterhelper.NewLogs(ctx, set, cfg, v.consumeLogs,
		exporterhelper.WithStart(v.Start),
		exporterhelper.WithShutdown(v.release),
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		exporterhelper.WithTimeout(exporterhelper.TimeoutConfig{Timeout: 0}),
	)
}

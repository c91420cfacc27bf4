package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"

	"github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector/internal/metadata"
)

// NewFactory returns the factory of the diagnosis connector: metrics in, verdict metrics and
// verdict-change logs out.
func NewFactory() connector.Factory {
	return connector.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		connector.WithMetricsToMetrics(createMetricsToMetrics, metadata.MetricsToMetricsStability),
		connector.WithMetricsToLogs(createMetricsToLogs, metadata.MetricsToLogsStability),
	)
}

func createMetricsToMetrics(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Metrics, error) {
	e, err := engineFor(set, cfg.(*Config))
	if err != nil {
		return nil, err
	}
	e.setMetrics(next)
	return &diagnosis{e: e}, nil
}

func createMetricsToLogs(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Logs) (connector.Metrics, error) {
	e, err := engineFor(set, cfg.(*Config))
	if err != nil {
		return nil, err
	}
	e.setLogs(next)
	return &diagnosis{e: e}, nil
}

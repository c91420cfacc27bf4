package lensviewexporter // import "github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter"

import (
	"context"

	"go.opentelemetry.io/otel/metric"

	"github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter/internal/metadata"
)

// storeTelemetry counts what the store forgets or refuses (the component's own telemetry,
// metadata.yaml, as contrib's servicegraph connector counts its edges).
type storeTelemetry interface {
	evicted(n int64)
	refused(n int64)
}

type nopTelemetry struct{}

func (nopTelemetry) evicted(int64) {}
func (nopTelemetry) refused(int64) {}

type viewTelemetry struct{ tb *metadata.TelemetryBuilder }

func (t viewTelemetry) evicted(n int64) {
	t.tb.ExporterLensviewNodesEvicted.Add(context.Background(), n)
}

func (t viewTelemetry) refused(n int64) {
	t.tb.ExporterLensviewPointsRefused.Add(context.Background(), n)
}

// observeNodes reports the number of nodes the store keeps, read under its lock.
func (s *store) observeNodes(_ context.Context, o metric.Int64Observer) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o.Observe(int64(len(s.nodes)))
	return nil
}

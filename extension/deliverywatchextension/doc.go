// Package deliverywatchextension logs when an exporter's sends start failing and when they
// recover. The exporters of this release line say little themselves: the exporterhelper logs
// each retry at info level and nothing when sends succeed again; the Prometheus remote-write
// exporter with its write-ahead log logs a refused connection at debug level only, and an error
// after retry_on_failure.max_elapsed_time (5 minutes). Their queues are in the collector's own
// telemetry, though: otelcol_exporter_queue_size (exporterhelper) and
// otelcol_exporter_prometheusremotewrite_wal_lag (the write-ahead log's unsent requests), and
// otelcol_exporter_send_failed_metric_points counts points dropped. The extension reads that
// telemetry from the collector's own Prometheus endpoint (service.telemetry.metrics.readers) and
// turns its changes into one warning when an outage starts and an info line when it ends.
//
//go:generate mdatagen metadata.yaml
package deliverywatchextension // import "github.com/otelcol-iclens/otelcol-iclens/extension/deliverywatchextension"

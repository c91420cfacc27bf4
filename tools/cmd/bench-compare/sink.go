//go:build linux

package main

import (
	"fmt"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/tools/internal/pushsink"
)

// The push paths a collector under test can deliver to, each into a sink in this process
// (tools/internal/pushsink; its CPU is the backend's, not counted).
const (
	pushRemoteWrite = pushsink.RemoteWrite
	pushOTLP        = pushsink.OTLP
)

// pushOverlay is a second --config file adding a push path to a collector's configuration, with
// the delivery settings of the shipped examples (examples/prometheus-remote-write,
// examples/otlp-vendor): the remote-write exporter's write-ahead log, or the OTLP exporter's
// persistent sending_queue in file_storage, under stateDir, behind the examples' batch processor (5 s);
// processors, exporters and extensions list the pipeline's processors and exporters and the
// service's extensions with it.
func pushOverlay(kind, url, stateDir, processors, exporters, extensions string) string {
	processors = strings.TrimPrefix(processors+", batch", ", ")
	var exporter string
	switch kind {
	case pushRemoteWrite:
		exporter = fmt.Sprintf(`  prometheus_remote_write:
    endpoint: %s
    wal: {directory: %s, truncate_frequency: 5s, lag_record_frequency: 5s}
    max_batch_request_parallelism: 1
    remote_write_queue: {enabled: false}
    retry_on_failure: {max_interval: 5s}
`, url, stateDir)
	default:
		extensions = strings.TrimPrefix(extensions+", file_storage", ", ")
		exporter = fmt.Sprintf(`  otlp_http:
    endpoint: %s
    sending_queue: {enabled: true, storage: file_storage, sizer: items, queue_size: 5000000, num_consumers: 1}
    retry_on_failure: {enabled: true, max_interval: 5s, max_elapsed_time: 0s}
extensions:
  file_storage: {directory: %s}
`, url, stateDir)
	}
	return fmt.Sprintf(`processors:
  batch: {timeout: 5s}
exporters:
%sservice:
  extensions: [%s]
  pipelines:
    metrics:
      processors: [%s]
      exporters: [%s]
`, exporter, extensions, processors, exporters)
}

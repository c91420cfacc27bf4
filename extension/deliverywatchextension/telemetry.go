package deliverywatchextension // import "github.com/otelcol-iclens/otelcol-iclens/extension/deliverywatchextension"

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The collector's own metrics the watcher reads (exporterhelper v0.165.0 internal/metadata
// generated_telemetry.go, contrib prometheusremotewriteexporter v0.165.1 metadata.yaml), as the
// telemetry's Prometheus reader names them.
const (
	queueSize     = "otelcol_exporter_queue_size"                    // points or requests queued, per exporter and signal
	walLag        = "otelcol_exporter_prometheusremotewrite_wal_lag" // write-ahead log entries written but not yet read for sending
	sendFailed    = "otelcol_exporter_send_failed_"                  // ..._metric_points, _spans, _log_records: dropped after the retries
	enqueueFailed = "otelcol_exporter_enqueue_failed_"               // the same suffixes: refused by the queue (full, or its storage could not write them)
)

// read fetches and parses the telemetry into one reading per exporter (and signal).
func (w *deliveryWatch) read(ctx context.Context) (map[string]reading, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.cfg.Endpoint, http.NoBody)
	if err != nil {
		return nil, err
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", w.cfg.Endpoint, err)
	}
	return readingsOf(families), nil
}

// readingsOf picks each exporter's queue, per signal where the queue is per signal, and its
// dropped and refused points out of the telemetry.
func readingsOf(families map[string]*dto.MetricFamily) map[string]reading {
	type key struct{ exporter, signal string } // signal "" for the write-ahead log: all signals
	queues := map[key]reading{}
	failed := map[key]float64{}
	refused := map[key]float64{}
	for fname, f := range families {
		for _, m := range f.GetMetric() {
			exp := label(m, "exporter")
			if exp == "" {
				continue
			}
			switch {
			case fname == queueSize:
				queues[key{exp, label(m, "data_type")}] = reading{backlog: value(m), source: "sending_queue", hasQueue: true}
			case fname == walLag:
				queues[key{exp, ""}] = reading{backlog: value(m), source: "write-ahead log", hasQueue: true}
			case strings.HasPrefix(fname, sendFailed):
				failed[key{exp, failedSignals[strings.TrimPrefix(fname, sendFailed)]}] += value(m)
			case strings.HasPrefix(fname, enqueueFailed):
				refused[key{exp, failedSignals[strings.TrimPrefix(fname, enqueueFailed)]}] += value(m)
			}
		}
	}
	name := func(k key) string {
		if k.signal == "" {
			return k.exporter
		}
		return k.exporter + " (" + k.signal + ")"
	}
	out := map[string]reading{}
	queued := map[string]bool{} // exporters with a queue
	for k, q := range queues {
		queued[k.exporter] = true
		for fk, n := range failed {
			if fk.exporter == k.exporter && (k.signal == "" || fk.signal == k.signal) {
				q.failed += n
			}
		}
		for fk, n := range refused {
			if fk.exporter == k.exporter && (k.signal == "" || fk.signal == k.signal) {
				q.refused += n
			}
		}
		out[name(k)] = q
	}
	for k, n := range failed {
		if !queued[k.exporter] {
			r := out[name(k)]
			r.failed = n
			out[name(k)] = r
		}
	}
	for k, n := range refused {
		if !queued[k.exporter] {
			r := out[name(k)]
			r.refused = n
			out[name(k)] = r
		}
	}
	return out
}

// failedSignals: the exporterhelper's send_failed and enqueue_failed counters' suffixes and the
// data_type label of the same signal's queue.
var failedSignals = map[string]string{"metric_points": "metrics", "spans": "traces", "log_records": "logs"}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

package deliverywatchextension // import "github.com/otelcol-iclens/otelcol-iclens/extension/deliverywatchextension"

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/collector/component"
	"go.uber.org/zap"
)

// The collector's own metrics the watcher reads (exporterhelper v0.165.0 obs_metrics, contrib
// prometheusremotewriteexporter v0.165.1 metadata.yaml), as the telemetry's Prometheus reader
// names them.
const (
	queueSize  = "otelcol_exporter_queue_size"                    // points or requests queued, per exporter and signal
	walLag     = "otelcol_exporter_prometheusremotewrite_wal_lag" // write-ahead log entries written but not yet read for sending
	sendFailed = "otelcol_exporter_send_failed_"                  // ..._metric_points, _spans, _log_records: dropped after the retries
)

// watcher reads the telemetry every check_interval and logs the exporters' transitions.
type watcher struct {
	cfg    *Config
	logger *zap.Logger
	client *http.Client

	cancel context.CancelFunc
	done   sync.WaitGroup

	exporters  map[string]*exporterState
	unreadable bool // the telemetry could not be read last time (said once)
}

func newWatcher(cfg *Config, logger *zap.Logger) *watcher {
	return &watcher{cfg: cfg, logger: logger, client: &http.Client{Timeout: cfg.CheckInterval}, exporters: map[string]*exporterState{}}
}

func (w *watcher) Start(context.Context, component.Host) error {
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		t := time.NewTicker(w.cfg.CheckInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				w.check(ctx, now)
			}
		}
	}()
	return nil
}

func (w *watcher) Shutdown(context.Context) error {
	if w.cancel != nil {
		w.cancel()
		w.done.Wait()
	}
	return nil
}

// check reads the telemetry once and steps every exporter's state.
func (w *watcher) check(ctx context.Context, now time.Time) {
	readings, err := w.read(ctx)
	if err != nil {
		if !w.unreadable {
			w.logger.Warn("Cannot read the collector's own telemetry; exporter outages will not be logged until it can",
				zap.String("endpoint", w.cfg.Endpoint), zap.Error(err))
			w.unreadable = true
		}
		return
	}
	if w.unreadable {
		w.logger.Info("Reading the collector's own telemetry again", zap.String("endpoint", w.cfg.Endpoint))
		w.unreadable = false
	}
	names := make([]string, 0, len(readings))
	for name := range readings {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s := w.exporters[name]
		if s == nil {
			s = &exporterState{}
			w.exporters[name] = s
		}
		r := readings[name]
		switch s.step(r, now, w.cfg.GrowingChecks) {
		case startedFailing:
			w.logger.Warn("Exporter sends are failing: its queue grows or it drops points",
				zap.String("exporter", name), zap.String("queue", r.source), zap.Float64("queued", r.backlog),
				zap.Float64("dropped", s.dropped))
		case recovered:
			w.logger.Warn("Exporter sends recovered: its queue is drained",
				zap.String("exporter", name), zap.String("queue", r.source), zap.Float64("queued", r.backlog),
				zap.Float64("peak_queued", s.peak), zap.Float64("dropped", s.dropped),
				zap.String("outage", now.Sub(s.since).Round(time.Second).String()))
		}
	}
}

// read fetches and parses the telemetry into one reading per exporter (and signal).
func (w *watcher) read(ctx context.Context) (map[string]reading, error) {
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
// dropped points out of the telemetry.
func readingsOf(families map[string]*dto.MetricFamily) map[string]reading {
	type key struct{ exporter, signal string } // signal "" for the write-ahead log: all signals
	queues := map[key]reading{}
	failed := map[key]float64{}
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
		out[name(k)] = q
	}
	for k, n := range failed {
		if !queued[k.exporter] {
			out[name(k)] = reading{failed: n}
		}
	}
	return out
}

// failedSignals: the exporterhelper's send_failed counters' suffixes and the data_type label of
// the same signal's queue.
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

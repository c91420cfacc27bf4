package deliverywatchextension // import "github.com/otelcol-iclens/otelcol-iclens/extension/deliverywatchextension"

import (
	"context"
	"net/http"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.uber.org/zap"
)

// deliveryWatch reads the telemetry every check_interval and logs the exporters' transitions: a
// warning when an exporter's sends start failing, an info line when they recover (the errtrack
// policy of the receivers: a failure at Warn, its end at Info).
type deliveryWatch struct {
	cfg      *Config
	id       component.ID
	settings component.TelemetrySettings
	logger   *zap.Logger
	client   *http.Client
	store    *stateStore // nil without storage

	cancel context.CancelFunc
	done   sync.WaitGroup

	exporters  map[string]*exporterState
	unreadable bool // the telemetry could not be read last time (said once)
}

func newDeliveryWatch(cfg *Config, set extension.Settings) *deliveryWatch {
	return &deliveryWatch{cfg: cfg, id: set.ID, settings: set.TelemetrySettings, logger: set.Logger, exporters: map[string]*exporterState{}}
}

// Start builds the HTTP client from the configuration (confighttp: TLS, headers, auth
// extensions) and starts the checks.
func (w *deliveryWatch) Start(ctx context.Context, host component.Host) error {
	client, err := w.cfg.ToClient(ctx, host.GetExtensions(), w.settings)
	if err != nil {
		return err
	}
	client.Timeout = w.cfg.readTimeout()
	w.client = client
	if err := w.openStore(ctx, host); err != nil {
		return err
	}
	loopCtx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		t := time.NewTicker(w.cfg.CheckInterval)
		defer t.Stop()
		for {
			select {
			case <-loopCtx.Done():
				return
			case now := <-t.C:
				w.check(loopCtx, now)
			}
		}
	}()
	return nil
}

// Shutdown stops the checks and closes the state's storage client.
func (w *deliveryWatch) Shutdown(ctx context.Context) error {
	if w.cancel != nil {
		w.cancel()
		w.done.Wait()
	}
	if w.client != nil {
		w.client.CloseIdleConnections()
	}
	return w.closeStore(ctx)
}

// check reads the telemetry once and steps every exporter's state.
func (w *deliveryWatch) check(ctx context.Context, now time.Time) {
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
	// An exporter the telemetry no longer reports (a reload removed it) is forgotten.
	for name := range w.exporters {
		if _, ok := readings[name]; !ok {
			delete(w.exporters, name)
		}
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
			w.logger.Warn("Exporter sends are failing: its queue grows, it drops points or its queue refuses them",
				zap.String("exporter", name), zap.String("queue", r.source), zap.Float64("queued", r.backlog),
				zap.Float64("dropped", s.Dropped), zap.Float64("refused", s.RefusedIn))
		case startedRefusing:
			w.logger.Warn("Exporter's queue refuses points: they are not kept, and their senders are told to retry",
				zap.String("exporter", name), zap.String("queue", r.source), zap.Float64("queued", r.backlog),
				zap.Float64("dropped", s.Dropped), zap.Float64("refused", s.RefusedIn))
		case recovered:
			w.logger.Info("Exporter sends recovered: its queue is drained",
				zap.String("exporter", name), zap.String("queue", r.source), zap.Float64("queued", r.backlog),
				zap.Float64("peak_queued", s.Peak), zap.Float64("dropped", s.Dropped), zap.Float64("refused", s.RefusedIn),
				zap.String("outage", now.Sub(s.Since).Round(time.Second).String()))
		}
	}
	w.saveState(ctx)
}

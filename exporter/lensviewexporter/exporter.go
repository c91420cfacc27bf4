package lensviewexporter // import "github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter"

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"golang.org/x/net/netutil"

	"github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter/internal/metadata"
	"github.com/otelcol-iclens/otelcol-iclens/internal/capture"
)

// viewExporter is one view: its store and its HTTP server. The metrics and the logs exporters
// of one configuration share it (factory.go), so that the page shows the diagnosis connector's
// sentences next to its verdicts.
type viewExporter struct {
	cfg       *Config
	set       component.TelemetrySettings
	store     *store
	server    *http.Server
	listener  net.Listener
	done      chan struct{}
	telemetry *metadata.TelemetryBuilder

	startOnce, stopOnce sync.Once
	startErr, stopErr   error
}

func newViewExporter(cfg *Config, set exporter.Settings) (*viewExporter, error) {
	unnamed, err := os.Hostname()
	if err != nil || unnamed == "" {
		unnamed = "localhost"
	}
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	st := newStore(cfg, set.Logger, unnamed)
	st.telemetry = viewTelemetry{tb: tb}
	if err := tb.RegisterExporterLensviewNodesCallback(st.observeNodes); err != nil {
		return nil, err
	}
	return &viewExporter{cfg: cfg, set: set.TelemetrySettings, store: st, telemetry: tb}, nil
}

func (e *viewExporter) Start(ctx context.Context, host component.Host) error {
	e.startOnce.Do(func() { e.startErr = e.start(ctx, host) })
	return e.startErr
}

func (e *viewExporter) start(ctx context.Context, host component.Host) error {
	ln, err := e.cfg.ToListener(ctx)
	if err != nil {
		return err
	}
	// At most max_connections at once: the rest wait in the listen backlog instead of taking
	// descriptors (golang.org/x/net/netutil.LimitListener).
	ln = netutil.LimitListener(ln, e.cfg.MaxConnections)
	var hub capture.Hub
	if e.cfg.Capture != nil {
		if hub, err = capture.Find(host, *e.cfg.Capture); err != nil {
			_ = ln.Close()
			return err
		}
	}
	srv, err := e.cfg.ToServer(ctx, host.GetExtensions(), e.set, newHandler(e.store, e.cfg.Refresh, newCaptureHandler(hub, e.set.Logger)))
	if err != nil {
		_ = ln.Close()
		return err
	}
	e.listener, e.server, e.done = ln, srv, make(chan struct{})
	scheme := "http"
	if e.cfg.TLS.HasValue() {
		scheme = "https"
	}
	e.set.Logger.Info("InterconnectLens view serving", zap.String("url", scheme+"://"+ln.Addr().String()+"/"))
	if reachableUnauthenticated(ln.Addr(), e.cfg.Auth.HasValue()) {
		e.set.Logger.Warn("the InterconnectLens view is reachable from other hosts without authentication; "+
			"bind it to 127.0.0.1 or configure auth (and tls)", zap.String("endpoint", ln.Addr().String()))
	}
	go func() {
		defer close(e.done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			componentstatus.ReportStatus(host, componentstatus.NewFatalErrorEvent(err))
		}
	}()
	return nil
}

// reachableUnauthenticated reports whether the view listens beyond loopback with no auth.
func reachableUnauthenticated(addr net.Addr, auth bool) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && !tcp.IP.IsLoopback() && !auth
}

func (e *viewExporter) Shutdown(ctx context.Context) error {
	e.stopOnce.Do(func() {
		e.telemetry.Shutdown()
		if e.server == nil {
			return
		}
		e.stopErr = e.server.Shutdown(ctx)
		<-e.done
	})
	return e.stopErr
}

func (e *viewExporter) consumeMetrics(_ context.Context, md pmetric.Metrics) error {
	e.store.consumeMetrics(md)
	return nil
}

func (e *viewExporter) consumeLogs(_ context.Context, ld plog.Logs) error {
	e.store.consumeLogs(ld)
	return nil
}

package deliverywatchextension

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-iclens/otelcol-iclens/extension/deliverywatchextension/internal/metadata"
)

func TestReadingsOfTelemetry(t *testing.T) {
	f, err := os.Open("testdata/telemetry.txt")
	require.NoError(t, err)
	defer f.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(f)
	require.NoError(t, err)
	got := readingsOf(families)
	assert.Equal(t, map[string]reading{
		"otlp_http (metrics)":     {backlog: 1011, source: "sending_queue", hasQueue: true, failed: 7},
		"otlp_http (traces)":      {backlog: 0, source: "sending_queue", hasQueue: true},
		"prometheus_remote_write": {backlog: 8, source: "write-ahead log", hasQueue: true},
		"prometheus (metrics)":    {failed: 2},
	}, got)
}

// telemetry serves a changing otelcol_exporter_queue_size as the collector's pull reader would.
type telemetry struct {
	mu    sync.Mutex
	queue float64
	down  bool
	body  string
}

func (s *telemetry) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		http.Error(w, "gone", http.StatusServiceUnavailable)
		return
	}
	if s.body != "" {
		_, _ = w.Write([]byte(s.body))
		return
	}
	_, _ = w.Write([]byte("# TYPE otelcol_exporter_queue_size gauge\notelcol_exporter_queue_size{data_type=\"metrics\",exporter=\"otlp_http\"} " +
		strings.TrimSpace(model.SampleValue(s.queue).String()) + "\n"))
}

func (s *telemetry) set(q float64, down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue, s.down, s.body = q, down, ""
}

// setBody serves body in place of the queue.
func (s *telemetry) setBody(body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body = body
}

// newTestWatch is a deliveryWatch on cfg, started against host, its log observed at Info.
func newTestWatch(t *testing.T, cfg *Config, host component.Host) (*deliveryWatch, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.InfoLevel)
	set := extensiontest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	w := newDeliveryWatch(cfg, set)
	require.NoError(t, w.Start(context.Background(), host))
	t.Cleanup(func() { require.NoError(t, w.Shutdown(context.Background())) })
	return w, logs
}

// testConfig: the defaults, reading url, checking every hour (the tests call check themselves).
func testConfig(url string, growing int) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.Endpoint, cfg.CheckInterval, cfg.GrowingChecks = url, time.Hour, growing
	return cfg
}

// TestWatcherLogs runs the watcher's checks against a telemetry endpoint whose queue fills and
// drains: one warning when the sends start failing, an info line when they recover, and one
// (only one) warning when the telemetry cannot be read.
func TestWatcherLogs(t *testing.T) {
	tel := &telemetry{}
	srv := httptest.NewServer(tel)
	defer srv.Close()
	w, logs := newTestWatch(t, testConfig(srv.URL+"/metrics", 2), componenttest.NewNopHost())
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i, q := range []float64{0, 0, 40, 80, 120, 0, 0, 0} {
		tel.set(q, false)
		w.check(ctx, now.Add(time.Duration(i)*10*time.Second))
	}
	warns := logs.FilterLevelExact(zapcore.WarnLevel).All()
	require.Len(t, warns, 1, "%v", logs.All())
	assert.Equal(t, "Exporter sends are failing: its queue grows, it drops points or its queue refuses them", warns[0].Message)
	assert.Equal(t, "otlp_http (metrics)", warns[0].ContextMap()["exporter"])
	rec := logs.FilterMessage("Exporter sends recovered: its queue is drained").All()
	require.Len(t, rec, 1, "%v", logs.All())
	assert.Equal(t, zapcore.InfoLevel, rec[0].Level, "a recovery is said at Info, as errtrack.Log.Recover says it")
	assert.Equal(t, 120.0, rec[0].ContextMap()["peak_queued"])
	assert.Equal(t, "40s", rec[0].ContextMap()["outage"], "from the first growth to the recovery")

	tel.set(0, true)
	for range 3 {
		w.check(ctx, now)
	}
	assert.Equal(t, 1, logs.FilterMessageSnippet("Cannot read the collector's own telemetry").Len())
	tel.set(0, false)
	w.check(ctx, now)
	assert.Equal(t, 1, logs.FilterMessageSnippet("Reading the collector's own telemetry again").Len())
}

// TestWatcherForgetsRemovedExporters: an exporter the telemetry stops reporting (a reload
// removed it) leaves the watcher's state.
func TestWatcherForgetsRemovedExporters(t *testing.T) {
	tel := &telemetry{}
	srv := httptest.NewServer(tel)
	defer srv.Close()
	w, _ := newTestWatch(t, testConfig(srv.URL, 2), componenttest.NewNopHost())
	w.check(context.Background(), time.Now())
	require.Contains(t, w.exporters, "otlp_http (metrics)")
	tel.setBody("# TYPE otelcol_exporter_queue_size gauge\notelcol_exporter_queue_size{data_type=\"logs\",exporter=\"otlp_http\"} 0\n")
	w.check(context.Background(), time.Now())
	assert.NotContains(t, w.exporters, "otlp_http (metrics)")
	assert.Contains(t, w.exporters, "otlp_http (logs)")
}

// TestClientFromConfig: the telemetry is read with the confighttp client the configuration
// describes (here its headers), not a hand-made one.
func TestClientFromConfig(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.Header.Get("X-Scope"):
		default:
		}
		_, _ = w.Write([]byte("# TYPE otelcol_exporter_queue_size gauge\n"))
	}))
	defer srv.Close()
	cfg := testConfig(srv.URL, 2)
	cfg.Headers = configopaque.MapList{{Name: "X-Scope", Value: "node-agent"}}
	w, logs := newTestWatch(t, cfg, componenttest.NewNopHost())
	w.check(context.Background(), time.Now())
	assert.Equal(t, "node-agent", <-got)
	assert.Zero(t, logs.FilterMessageSnippet("Cannot read").Len(), "%v", logs.All())
	assert.Equal(t, time.Hour, w.client.Timeout, "a timeout of 0 is check_interval")
}

func TestStartShutdown(t *testing.T) {
	w := newDeliveryWatch(createDefaultConfig().(*Config), extensiontest.NewNopSettings(metadata.Type))
	require.NoError(t, w.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, w.Shutdown(context.Background()))
}

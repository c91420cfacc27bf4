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
	"go.opentelemetry.io/collector/component/componenttest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
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
}

func (s *telemetry) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		http.Error(w, "gone", http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("# TYPE otelcol_exporter_queue_size gauge\notelcol_exporter_queue_size{data_type=\"metrics\",exporter=\"otlp_http\"} " +
		strings.TrimSpace(model.SampleValue(s.queue).String()) + "\n"))
}

func (s *telemetry) set(q float64, down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue, s.down = q, down
}

// TestWatcherLogs runs the watcher's checks against a telemetry endpoint whose queue fills and
// drains: one warning when the sends start failing, one when they recover, and one (only one)
// when the telemetry cannot be read.
func TestWatcherLogs(t *testing.T) {
	tel := &telemetry{}
	srv := httptest.NewServer(tel)
	defer srv.Close()
	core, logs := observer.New(zapcore.InfoLevel)
	w := newWatcher(&Config{Endpoint: srv.URL + "/metrics", CheckInterval: time.Second, GrowingChecks: 2}, zap.New(core))
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i, q := range []float64{0, 0, 40, 80, 120, 0, 0, 0} {
		tel.set(q, false)
		w.check(ctx, now.Add(time.Duration(i)*10*time.Second))
	}
	warns := logs.FilterLevelExact(zapcore.WarnLevel).All()
	require.Len(t, warns, 2, "%v", logs.All())
	assert.Equal(t, "Exporter sends are failing: its queue grows or it drops points", warns[0].Message)
	assert.Equal(t, "otlp_http (metrics)", warns[0].ContextMap()["exporter"])
	assert.Equal(t, "Exporter sends recovered: its queue is drained", warns[1].Message)
	assert.Equal(t, 120.0, warns[1].ContextMap()["peak_queued"])
	assert.Equal(t, "40s", warns[1].ContextMap()["outage"], "from the first growth to the recovery")

	tel.set(0, true)
	for range 3 {
		w.check(ctx, now)
	}
	assert.Equal(t, 1, logs.FilterMessageSnippet("Cannot read the collector's own telemetry").Len())
	tel.set(0, false)
	w.check(ctx, now)
	assert.Equal(t, 1, logs.FilterMessageSnippet("Reading the collector's own telemetry again").Len())
}

func TestStartShutdown(t *testing.T) {
	w := newWatcher(createDefaultConfig().(*Config), zap.NewNop())
	require.NoError(t, w.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, w.Shutdown(context.Background()))
}

func TestConfigValidate(t *testing.T) {
	assert.NoError(t, createDefaultConfig().(*Config).Validate())
	err := (&Config{Endpoint: "127.0.0.1:8888", CheckInterval: 0, GrowingChecks: 0}).Validate()
	assert.ErrorContains(t, err, "endpoint")
	assert.ErrorContains(t, err, "check_interval")
	assert.ErrorContains(t, err, "growing_checks")
}

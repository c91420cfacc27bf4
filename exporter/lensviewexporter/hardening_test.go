package lensviewexporter

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter/internal/metadatatest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
)

// startView starts the exporter as the collector does, on telemetry the test reads; it returns
// the view's base URL.
func startView(t *testing.T, tt *componenttest.Telemetry, logger *zap.Logger, mutate func(*Config)) (*viewExporter, string) {
	t.Helper()
	set := metadatatest.NewSettings(tt)
	set.Logger = logger
	cfg := createDefaultConfig().(*Config)
	cfg.NetAddr.Endpoint = "127.0.0.1:0"
	if mutate != nil {
		mutate(cfg)
	}
	require.NoError(t, cfg.Validate())
	v, err := acquire(cfg, set)
	require.NoError(t, err)
	require.NoError(t, v.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, v.release(context.Background())) })
	return v.viewExporter, "http://" + v.listener.Addr().String() + "/"
}

// TestEvictsLeastRecentlySeenNode: past max_nodes the view keeps the nodes that report now, not
// the first max_nodes that ever did; the eviction is said at Warn with a count and counted in the
// exporter's telemetry.
func TestEvictsLeastRecentlySeenNode(t *testing.T) {
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	core, logs := observer.New(zap.InfoLevel)
	v, _ := startView(t, tt, zap.New(core), func(c *Config) { c.MaxNodes = 2 })
	start := time.Now()
	for i := range 5 {
		at := start.Add(time.Duration(i) * time.Millisecond)
		require.NoError(t, v.consumeMetrics(context.Background(), batch(fmt.Sprintf("node%d", i), at, at, ioPoint("rnic", "transmit", "mlx5_0/1", 1))))
	}
	var names []string
	for _, n := range v.store.nodeList() {
		names = append(names, n.Name)
	}
	assert.Equal(t, []string{"node3", "node4"}, names)
	warns := logs.FilterLevelExact(zap.WarnLevel).FilterMessageSnippet("max_nodes").All()
	require.Len(t, warns, 1, "said once a minute at most")
	assert.Equal(t, int64(1), warns[0].ContextMap()["evicted"])
	metadatatest.AssertEqualExporterLensviewNodesEvicted(t, tt, []metricdata.DataPoint[int64]{{Value: 3}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualExporterLensviewNodes(t, tt, []metricdata.DataPoint[int64]{{Value: 2}}, metricdatatest.IgnoreTimestamp())
}

// TestRefusesPointsFarFromNow: a point stamped 31 years ahead does not freeze the node's chart
// (it would stay the newest point of its ring); it is counted and said once.
func TestRefusesPointsFarFromNow(t *testing.T) {
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	core, logs := observer.New(zap.InfoLevel)
	v, _ := startView(t, tt, zap.New(core), nil)
	start := time.Now().Add(-time.Minute)
	future := start.AddDate(31, 0, 0)
	for i := range 20 {
		at := start.Add(time.Duration(i) * time.Second)
		if i == 5 || i == 6 {
			require.NoError(t, v.consumeMetrics(context.Background(), batch("n", start, future, ioPoint("rnic", "transmit", "mlx5_0/1", 1e12))))
		}
		require.NoError(t, v.consumeMetrics(context.Background(), batch("n", start, at, ioPoint("rnic", "transmit", "mlx5_0/1", float64(i)*1e9))))
	}
	page, ok := v.store.nodeView("n", 0, time.Second, nodestate.OwnerID{})
	require.True(t, ok)
	s, ok := seriesByLabel(page, "RNIC(mlx5_0)[TX]")
	require.True(t, ok)
	require.Len(t, s.T, 19, "every rate of the 20 samples, none across the refused point")
	for _, r := range s.V {
		assert.InDelta(t, 1e9, r, 1)
	}
	assert.Len(t, logs.FilterMessageSnippet("far from").All(), 1, "said once")
	metadatatest.AssertEqualExporterLensviewPointsRefused(t, tt, []metricdata.DataPoint[int64]{{Value: 2}}, metricdatatest.IgnoreTimestamp())
}

// TestBoundedConnections: the view serves at most max_connections at once and gives a client
// read_header_timeout to send its headers, so that half-open connections cannot take the file
// descriptors the receivers read the hardware with. With one slot held by a client that sends
// nothing, a second client is not served until that one's header time is over.
func TestBoundedConnections(t *testing.T) {
	def := createDefaultConfig().(*Config)
	assert.LessOrEqual(t, def.ReadHeaderTimeout, 10*time.Second, "a half-open connection is dropped within seconds")
	assert.Positive(t, def.MaxConnections)

	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	v, url := startView(t, tt, zap.NewNop(), func(c *Config) {
		c.MaxConnections = 1
		c.ReadHeaderTimeout = time.Hour
	})
	assert.Equal(t, time.Hour, v.server.ReadHeaderTimeout)
	idle, err := net.Dial("tcp", v.listener.Addr().String())
	require.NoError(t, err)
	// The idle connection reached the listen backlog first (Dial returned), so it is the one the
	// server accepts into its one slot; the request below waits behind it.
	served := make(chan int, 1)
	go func() {
		resp, err := http.Get(url + "api/nodes")
		if err != nil {
			served <- -1
			return
		}
		resp.Body.Close()
		served <- resp.StatusCode
	}()
	select {
	case code := <-served:
		t.Fatalf("a second client was served (%d) while the one slot was held", code)
	case <-time.After(500 * time.Millisecond):
		// Not served while the slot is held: whatever the machine's speed, the limit is what
		// keeps it waiting (without it, it is served at once).
	}
	require.NoError(t, idle.Close())
	select {
	case code := <-served:
		assert.Equal(t, http.StatusOK, code, "served once the slot is free")
	case <-time.After(time.Minute):
		t.Fatal("the second client is still not served a minute after the slot was freed")
	}
}

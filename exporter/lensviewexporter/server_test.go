package lensviewexporter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter/internal/metadata"
)

func serve(t *testing.T) (*testStore, *httptest.Server) {
	t.Helper()
	st := newTestStore(t, nil)
	srv := httptest.NewServer(newHandler(st.store, 2*time.Second, nil))
	t.Cleanup(srv.Close)
	return st, srv
}

func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

func TestSecurityHeadersOnEveryAnswer(t *testing.T) {
	_, srv := serve(t)
	for _, path := range []string{"/", "/app.js", "/uplot/uPlot.iife.min.js", "/api/nodes", "/api/node?name=none", "/nothing"} {
		resp, _ := get(t, srv.URL+path)
		h := resp.Header
		assert.Contains(t, h.Get("Content-Security-Policy"), "default-src 'none'", path)
		assert.Contains(t, h.Get("Content-Security-Policy"), "frame-ancestors 'none'", path)
		assert.NotContains(t, h.Get("Content-Security-Policy"), "unsafe-inline", path)
		assert.Equal(t, "nosniff", h.Get("X-Content-Type-Options"), path)
		assert.Equal(t, "DENY", h.Get("X-Frame-Options"), path)
		assert.Equal(t, "no-referrer", h.Get("Referrer-Policy"), path)
	}
}

func TestReadOnly(t *testing.T) {
	_, srv := serve(t)
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		req, err := http.NewRequest(method, srv.URL+"/api/nodes", strings.NewReader("{}"))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, method)
		assert.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
	}
}

func TestAPI(t *testing.T) {
	st, srv := serve(t)
	start := st.clock
	for i := range 3 {
		at := start.Add(time.Duration(i) * time.Second)
		st.feed(at, batch("node1", start, at, ioPoint("rnic", "transmit", "mlx5_1/1", float64(i)*congested)))
	}
	resp, body := get(t, srv.URL+"/api/nodes")
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	var nodes []nodeSummary
	require.NoError(t, json.Unmarshal(body, &nodes))
	require.Len(t, nodes, 1)
	assert.Equal(t, "node1", nodes[0].Name)

	_, body = get(t, srv.URL+"/api/node?name=node1")
	var v nodeJSON
	require.NoError(t, json.Unmarshal(body, &v))
	require.Len(t, v.Series, 1)
	assert.Equal(t, "RNIC(mlx5_1)[TX]", v.Series[0].Label)
	assert.Len(t, v.Series[0].T, 2)
	assert.Equal(t, int64(2000), v.RefreshMs)
	assert.Equal(t, (30 * time.Minute).Milliseconds(), v.WindowMs)

	// since: only the newer points, so that the page's poll moves little.
	_, body = get(t, srv.URL+"/api/node?name=node1&since="+itoa(v.Series[0].T[0]))
	require.NoError(t, json.Unmarshal(body, &v))
	assert.Len(t, v.Series[0].T, 1)

	resp, _ = get(t, srv.URL+"/api/node?name=node1&since=yesterday")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	resp, _ = get(t, srv.URL+"/api/node?name=unknown")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func itoa(v int64) string { b, _ := json.Marshal(v); return string(b) }

// TestEmbeddedChartLibrary checks that the chart library in the binary is uPlot 1.6.32 as npm
// serves it (`npm pack uplot@1.6.32`, dist/ and LICENSE), with its licence beside it.
func TestEmbeddedChartLibrary(t *testing.T) {
	want := map[string]string{
		"web/uplot/uPlot.iife.min.js": "",
		"web/uplot/uPlot.min.css":     "",
		"web/uplot/LICENSE":           "",
	}
	for name := range want {
		b, err := fs.ReadFile(web, name)
		require.NoError(t, err, name)
		sum := sha256.Sum256(b)
		want[name] = hex.EncodeToString(sum[:])
	}
	assert.Equal(t, uplotSHA256, want, "web/uplot must be the files of the npm package uplot@1.6.32")
	lic, _ := fs.ReadFile(web, "web/uplot/LICENSE")
	assert.Contains(t, string(lic), "The MIT License")
}

// TestPageLoadsOnlyItsOwnFiles reads the page and its script for references to another host;
// the browser test (distributions/otelcol-iclens/lensview_test.go) checks the requests the page
// really makes.
func TestPageLoadsOnlyItsOwnFiles(t *testing.T) {
	for _, name := range []string{"web/index.html", "web/app.js", "web/app.css"} {
		b, err := fs.ReadFile(web, name)
		require.NoError(t, err)
		assert.NotRegexp(t, regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//`), string(b), name)
		assert.NotRegexp(t, regexp.MustCompile(`(?i)(fetch|import)\(\s*["'](https?:)?//`), string(b), name)
		assert.NotContains(t, string(b), " style=\"", "%s: inline styles are refused by the CSP", name)
	}
	_, srv := serve(t)
	resp, body := get(t, srv.URL+"/")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), `src="uplot/uPlot.iife.min.js"`)
}

func TestNoDirectoryListing(t *testing.T) {
	_, srv := serve(t)
	resp, _ := get(t, srv.URL+"/uplot/")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// TestExporterServes starts the exporter as the collector does and reads its API at the URL it
// logs.
func TestExporterServes(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	set := exportertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	cfg := createDefaultConfig().(*Config)
	cfg.NetAddr.Endpoint = "127.0.0.1:0"
	exp, err := NewFactory().CreateMetrics(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, exp.ConsumeMetrics(context.Background(), batch("n", time.Now(), time.Now(), ioPoint("rnic", "transmit", "mlx5_0/1", 1))))
	serving := logs.FilterMessage("InterconnectLens view serving").All()
	require.Len(t, serving, 1)
	resp, body := get(t, serving[0].ContextMap()["url"].(string)+"api/nodes")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), `"name":"n"`)
	assert.Zero(t, logs.FilterLevelExact(zap.WarnLevel).Len(), "loopback: no warning")
	require.NoError(t, exp.Shutdown(context.Background()))
}

func TestWarnsWhenReachableWithoutAuth(t *testing.T) {
	assert.False(t, reachableUnauthenticated(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, false))
	assert.False(t, reachableUnauthenticated(&net.TCPAddr{IP: net.IPv6loopback}, false))
	assert.True(t, reachableUnauthenticated(&net.TCPAddr{IP: net.IPv4zero}, false))
	assert.True(t, reachableUnauthenticated(&net.TCPAddr{IP: net.IPv4(10, 0, 0, 5)}, false))
	assert.False(t, reachableUnauthenticated(&net.TCPAddr{IP: net.IPv4zero}, true), "auth configured")
}

// TestConsumeWhileServing feeds the store while the API is read. Under -race (CI runs it so) it
// proves the store's locking; without, it still checks that every answer read meanwhile is one
// consistent snapshot: the RDMA series' times strictly increase, each rate is the 10.3 GB/s fed,
// and no answer has fewer points than the one before or more than were fed.
func TestConsumeWhileServing(t *testing.T) {
	st, srv := serve(t)
	start := st.clock
	st.feed(start, demoNode("node1", start, start, 0))
	const samples = 200
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i < samples; i++ {
			at := start.Add(time.Duration(i) * time.Second)
			md := demoNode("node1", start, at, i)
			st.mu.Lock()
			st.clock = at
			st.mu.Unlock()
			st.consumeMetrics(md)
		}
	}()
	seen := 0
	check := func() {
		_, body := get(t, srv.URL+"/api/node?name=node1")
		var v nodeJSON
		require.NoError(t, json.Unmarshal(body, &v))
		s, ok := seriesByLabel(v, "RNIC(mlx5_0)[TX]")
		if !ok {
			require.Zero(t, seen, "the series, once shown, stays")
			return
		}
		require.Len(t, s.V, len(s.T))
		for i := range s.T {
			if i > 0 {
				require.Greater(t, s.T[i], s.T[i-1], "times strictly increase")
			}
			require.InDelta(t, 10.3e9, s.V[i], 1, "point %d", i)
		}
		require.GreaterOrEqual(t, len(s.T), seen, "an answer never loses points the one before had")
		require.LessOrEqual(t, len(s.T), samples-1)
		seen = len(s.T)
	}
	for {
		select {
		case <-done:
			check()
			assert.Equal(t, samples-1, seen)
			return
		default:
			check()
		}
	}
}

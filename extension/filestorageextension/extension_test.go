package filestorageextension

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/xpdata/request"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-iclens/otelcol-iclens/extension/filestorageextension/internal/metadata"
	"github.com/otelcol-iclens/otelcol-iclens/internal/filedamage"
)

var otlpHTTP = component.MustNewID("otlp_http")

// startStorage starts the extension on dir and returns it with its log.
func startStorage(t *testing.T, dir string) (storage.Extension, *observer.ObservedLogs) {
	t.Helper()
	cfg := NewFactory().CreateDefaultConfig().(*filestorage.Config)
	cfg.Directory = dir
	require.NoError(t, cfg.Validate())
	core, logs := observer.New(zapcore.InfoLevel)
	set := extensiontest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	ext, err := NewFactory().Create(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })
	return ext.(storage.Extension), logs
}

// fillQueue writes what the exporterhelper's persistent queue writes (v0.165.0
// internal/queue/persistent_queue.go putInternal): requests under their decimal index, each a
// pdata/xpdata/request metrics request, here of 100 points each, through the client
// file_storage gives an exporter for its metrics queue. It returns the database's path.
func fillQueue(t *testing.T, dir string, requests int) string {
	t.Helper()
	ext, _ := startStorage(t, dir)
	client, err := ext.GetClient(context.Background(), component.KindExporter, otlpHTTP, "metrics")
	require.NoError(t, err)
	md := pmetric.NewMetrics()
	g := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty().SetEmptyGauge()
	for i := range 100 {
		g.DataPoints().AppendEmpty().SetIntValue(int64(i))
	}
	buf, err := request.MarshalMetrics(context.Background(), md)
	require.NoError(t, err)
	for i := range requests {
		require.NoError(t, client.Set(context.Background(), strconv.Itoa(i), buf))
	}
	require.NoError(t, client.Close(context.Background()))
	path := filepath.Join(dir, "exporter_otlp_http__metrics")
	require.FileExists(t, path)
	return path
}

// TestDamagedFileMovedAside: the two damages the built collector met, a file truncated to
// 64 KiB (bbolt then panics rebuilding its freelist, db.go freepages) and one overwritten at
// random (bbolt.Open: invalid database). The extension starts, names the file, moves it aside,
// says how much of the queue it could still read, and gives the exporter a new, working client.
func TestDamagedFileMovedAside(t *testing.T) {
	for _, tt := range filedamage.Cases {
		t.Run(tt.Name, func(t *testing.T) {
			dir := t.TempDir()
			path := fillQueue(t, dir, 400)
			tt.Damage(t, path)

			ext, logs := startStorage(t, dir)
			warns := logs.FilterMessageSnippet("Storage file is damaged").All()
			require.Len(t, warns, 1, "%v", logs.All())
			f := warns[0].ContextMap()
			t.Logf("%s: %v", tt.Name, f)
			assert.Equal(t, path, f["file"])
			assert.Equal(t, "metrics", f["signal"])
			aside := f["moved_to"].(string)
			assert.FileExists(t, aside, "the damaged file is kept for inspection")
			assert.Less(t, f["requests_readable"], int64(400), "what was lost is counted against what it held")
			assert.Equal(t, f["requests_readable"].(int64)*100, f["items_readable"], "points counted from the readable requests")

			client, err := ext.GetClient(context.Background(), component.KindExporter, otlpHTTP, "metrics")
			require.NoError(t, err, "a new queue in place of the damaged one")
			require.NoError(t, client.Set(context.Background(), "0", []byte("x")))
			got, err := client.Get(context.Background(), "0")
			require.NoError(t, err)
			assert.Equal(t, []byte("x"), got)
			require.NoError(t, client.Close(context.Background()))
		})
	}
}

// TestSoundFileKept: an undamaged queue is left where it is, with its content, and nothing said.
func TestSoundFileKept(t *testing.T) {
	dir := t.TempDir()
	fillQueue(t, dir, 50)
	ext, logs := startStorage(t, dir)
	assert.Zero(t, logs.FilterMessageSnippet("damaged").Len(), "%v", logs.All())
	client, err := ext.GetClient(context.Background(), component.KindExporter, otlpHTTP, "metrics")
	require.NoError(t, err)
	got, err := client.Get(context.Background(), "49")
	require.NoError(t, err)
	assert.NotEmpty(t, got)
	require.NoError(t, client.Close(context.Background()))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no file moved aside")
}

// TestOnlyItsOwnFiles: files file_storage did not name (another program's, a backup, a damaged
// file already moved aside) are never checked or moved.
func TestOnlyItsOwnFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"notes.txt", "exporter_otlp_http__metrics.20261201T000000.000Z.damaged", "exporter_x.backup"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("not a database"), 0o600))
	}
	_, logs := startStorage(t, dir)
	assert.Zero(t, logs.Len(), "%v", logs.All())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 3)
}

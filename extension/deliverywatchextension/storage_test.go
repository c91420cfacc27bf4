package deliverywatchextension

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap/zapcore"

	"github.com/otelcol-iclens/otelcol-iclens/extension/deliverywatchextension/internal/metadata"
)

// memStorage is a storage extension keeping its clients' keys in memory across the watchers of
// one test, as file_storage keeps them on disk across processes.
type memStorage struct {
	component.StartFunc
	component.ShutdownFunc
	mu   sync.Mutex
	keys map[string][]byte
}

func (m *memStorage) GetClient(context.Context, component.Kind, component.ID, string) (storage.Client, error) {
	return memClient{m}, nil
}

type memClient struct{ m *memStorage }

func (c memClient) Get(_ context.Context, key string) ([]byte, error) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	return c.m.keys[key], nil
}

func (c memClient) Set(_ context.Context, key string, value []byte) error {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	c.m.keys[key] = append([]byte(nil), value...)
	return nil
}

func (c memClient) Delete(_ context.Context, key string) error {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	delete(c.m.keys, key)
	return nil
}

func (memClient) Batch(context.Context, ...*storage.Operation) error { return nil }
func (memClient) Close(context.Context) error                        { return nil }

type storageHost struct {
	component.Host
	exts map[component.ID]component.Component
}

func (h storageHost) GetExtensions() map[component.ID]component.Component { return h.exts }

// TestOutageAcrossRestart: three outages that span a restart of the collector, each said once
// as failing and once as recovered, over two processes sharing the watcher's storage:
//   - it starts growing before the restart and is first seen failing after it;
//   - it is seen failing before the restart and the queue drains after it;
//   - it is seen failing before the restart and goes on after it.
func TestOutageAcrossRestart(t *testing.T) {
	storageID := component.MustNewID("file_storage")
	for _, tt := range []struct {
		name           string
		before, after  []float64 // queue sizes read by the first and the second process
		outage         string    // the recovery's outage: from the first growth
		failingAtStart bool      // the second process starts inside a said outage
	}{
		{"growth spans the restart", []float64{0, 0, 40, 80}, []float64{120, 160, 0, 0, 0}, "1m10s", false},
		{"drained after the restart", []float64{0, 0, 40, 80, 120, 160}, []float64{0, 0, 0}, "1m10s", true},
		{"outage goes on after the restart", []float64{0, 0, 40, 80, 120}, []float64{200, 240, 0, 0, 0}, "1m20s", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tel := &telemetry{}
			srv := httptest.NewServer(tel)
			defer srv.Close()
			mem := &memStorage{keys: map[string][]byte{}}
			host := storageHost{exts: map[component.ID]component.Component{storageID: mem}}
			cfg := testConfig(srv.URL, 3)
			cfg.Storage = &storageID
			now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
			run := func(queue []float64) (warns, recoveries int, outage string, failingAtStart bool) {
				w, logs := newTestWatch(t, cfg, host)
				failingAtStart = logs.FilterMessageSnippet("were failing when the collector stopped").Len() == 1
				for _, q := range queue {
					tel.set(q, false)
					w.check(context.Background(), now)
					now = now.Add(10 * time.Second)
				}
				require.NoError(t, w.Shutdown(context.Background()))
				for _, e := range logs.FilterMessageSnippet("Exporter sends recovered").All() {
					assert.Equal(t, zapcore.InfoLevel, e.Level)
					outage = e.ContextMap()["outage"].(string)
				}
				return logs.FilterMessageSnippet("Exporter sends are failing").Len(), logs.FilterMessageSnippet("Exporter sends recovered").Len(), outage, failingAtStart
			}
			w1, r1, _, _ := run(tt.before)
			now = now.Add(10 * time.Second) // the collector's downtime
			w2, r2, outage, failing := run(tt.after)
			assert.Equal(t, 1, w1+w2, "the outage is said failing once")
			assert.Equal(t, 0, r1)
			assert.Equal(t, 1, r2, "the outage's recovery is said once, by the process that sees it")
			assert.Equal(t, tt.outage, outage, "the recovery counts the outage from its first growth, across the restart")
			assert.Equal(t, tt.failingAtStart, failing, "the second process says it starts inside an outage")
		})
	}
}

// TestStorageNotAStorageExtension: a storage that names no extension of the service, or one that
// is not a storage extension, fails Start, naming it.
func TestStorageNotAStorageExtension(t *testing.T) {
	id := component.MustNewID("file_storage")
	cfg := testConfig("http://127.0.0.1:1/metrics", 3)
	cfg.Storage = &id
	for name, exts := range map[string]map[component.ID]component.Component{
		`storage: no extension "file_storage" in the service`: {},
		`storage: extension "file_storage" is not a storage extension`: {id: struct {
			component.StartFunc
			component.ShutdownFunc
		}{}},
	} {
		w := newDeliveryWatch(cfg, extensiontest.NewNopSettings(metadata.Type))
		err := w.Start(context.Background(), storageHost{exts: exts})
		assert.EqualError(t, err, name)
		require.NoError(t, w.Shutdown(context.Background()))
	}
}

package ncclreceiver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/ncclreceiver/internal/metadata"
)

const testHost = "hgx-h100-07"

// testConfig reads dumpDir every 10 ms, joins GPUs from root, and has RAS off unless asked for.
func testConfig(root, dumpDir string) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.RootPath = root
	cfg.Inspector.DumpDir = dumpDir
	cfg.Inspector.PollInterval = 10 * time.Millisecond
	cfg.RAS.Endpoint = ""
	return cfg
}

// startScraper starts a scraper on cfg with an observed logger and the given host.
func startScraper(t *testing.T, cfg *Config, host component.Host) (*ncclScraper, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zap.InfoLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	s := newScraper(cfg, set)
	s.localHost = testHost
	if host == nil {
		host = componenttest.NewNopHost()
	}
	require.NoError(t, s.start(context.Background(), host))
	return s, logs
}

// waitFor polls cond until it holds; the deadline is generous because it only bounds a test
// that would otherwise hang, it measures nothing.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (s *ncclScraper) outcome(name string) int64 {
	s.agg.mu.Lock()
	defer s.agg.mu.Unlock()
	return s.agg.outcomes[name]
}

// appendLines appends lines to dir/name, creating it.
func appendLines(t *testing.T, dir, name string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	for _, l := range lines {
		_, err = f.WriteString(l)
		require.NoError(t, err)
	}
	require.NoError(t, f.Close())
}

// allReduce is an AllReduce of 8 ranks on one node with the Inspector's own bus-bandwidth
// factor 2(n-1)/n (inspector.cc inspectorComputeOpBw).
func allReduce(comm string, rank, pid int, sn uint64, bytes, us uint64) testfs.InspectorOp {
	algo := float64(bytes) / 1e9 / (float64(us) / 1e6)
	return testfs.InspectorOp{
		CommID: comm, Rank: rank, NRanks: 8, NNodes: 1, Hostname: testHost, PID: pid,
		DumpUs: 1748030377748202 + sn, Op: "AllReduce", SN: sn, MsgBytes: bytes, ExecUs: us,
		AlgoBw: algo, BusBw: algo * 2 * 7 / 8,
	}
}

func fileName(pid int) string { return fmt.Sprintf("%s-pid%d.log", testHost, pid) }

// pointsOf returns the data points of one metric by attribute string (a histogram's by its
// count), summed over resources.
func pointsOf(md pmetric.Metrics, name string) map[string]float64 {
	out := map[string]float64{}
	for _, dp := range metrictest.Points(md, name) {
		v := dp.DoubleValue()
		if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
			v = float64(dp.IntValue())
		}
		out[attrKey(dp.Attributes().AsRaw())] += v
	}
	for _, m := range metrictest.Metrics(md, name) {
		if m.Type() != pmetric.MetricTypeHistogram {
			continue
		}
		for p := 0; p < m.Histogram().DataPoints().Len(); p++ {
			dp := m.Histogram().DataPoints().At(p)
			out[attrKey(dp.Attributes().AsRaw())] += float64(dp.Count())
		}
	}
	return out
}

func attrKey(a map[string]any) string {
	keys := []string{"nccl.comm.id", "nccl.rank", "nccl.collective", "nccl.message_size", "pci.bus_id", "outcome", "rank.state", "bound"}
	s := ""
	for _, k := range keys {
		if v, ok := a[k]; ok {
			s += fmt.Sprintf("%s=%v ", k, v)
		}
	}
	return s
}

// sum adds every point of a metric.
func sum(points map[string]float64) float64 {
	t := 0.0
	for _, v := range points {
		t += v
	}
	return t
}

// memStorage is a storage extension kept in memory, shared by the receivers of one test so
// that a second receiver finds the offsets the first one saved (as file_storage keeps them on
// disk across a collector restart).
type memStorage struct {
	mu   sync.Mutex
	data map[string][]byte
}

func (m *memStorage) Start(context.Context, component.Host) error { return nil }
func (m *memStorage) Shutdown(context.Context) error              { return nil }
func (m *memStorage) GetClient(context.Context, component.Kind, component.ID, string) (storage.Client, error) {
	return m, nil
}

func (m *memStorage) Get(_ context.Context, k string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.data[k], nil
}

func (m *memStorage) Set(_ context.Context, k string, v []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.data[k] = append([]byte(nil), v...)
	return nil
}

func (m *memStorage) Delete(_ context.Context, k string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.data, k)
	return nil
}

func (m *memStorage) Batch(ctx context.Context, ops ...*storage.Operation) error {
	for _, op := range ops {
		var err error
		switch op.Type {
		case storage.Get:
			op.Value, err = m.Get(ctx, op.Key)
		case storage.Set:
			err = m.Set(ctx, op.Key, op.Value)
		case storage.Delete:
			err = m.Delete(ctx, op.Key)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (m *memStorage) Close(context.Context) error { return nil }

// storageHost is a host with one storage extension.
type storageHost struct {
	id  component.ID
	ext *memStorage
}

func (h storageHost) GetExtensions() map[component.ID]component.Component {
	return map[component.ID]component.Component{h.id: h.ext}
}

// singleResource copies the i-th resource of md into a metrics of its own.
func singleResource(md pmetric.Metrics, i int) pmetric.Metrics {
	out := pmetric.NewMetrics()
	md.ResourceMetrics().At(i).CopyTo(out.ResourceMetrics().AppendEmpty())
	return out
}

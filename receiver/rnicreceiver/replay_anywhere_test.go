package rnicreceiver

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver/internal/metadata"
)

// writeBondReplay writes a recording of testdata/synthetic (the tree, then one sample a second)
// in which mlx5_bond_0/1's port_xmit_data counter reads each of xmit in turn, and returns its path.
func writeBondReplay(t *testing.T, xmit []uint64) string {
	t.Helper()
	tree, err := recording.Snapshot(filepath.Join("testdata", "synthetic"), []string{"sys"}, nil)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "synthetic.jsonl")
	w, err := recording.Create(file, recording.Header{Receiver: "rnic", Interval: recording.Duration(time.Second), Note: t.Name()})
	require.NoError(t, err)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	bond := "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_bond_0/ports/1/counters/port_xmit_data"
	sample, err := json.Marshal(recording.RNICSample{})
	require.NoError(t, err)
	require.NoError(t, w.Write(recording.Record{Time: t0, Tree: tree}))
	for i, v := range xmit {
		require.NoError(t, w.Write(recording.Record{Time: t0.Add(time.Duration(i) * time.Second),
			Files: map[string]string{bond: fmt.Sprint(v)}, Sample: sample}))
	}
	require.NoError(t, w.Close())
	return file
}

// TestReplayOnAnyPlatform replays a recording of testdata/synthetic through the receiver's own
// newMetricsScraper: on Linux and, with no sysfs there, on darwin and windows alike (the replayed
// tree is plain files, internal/sysfs read_others.go), as the cpuuncore and gpu receivers' replays
// do. Two samples: the baseline, then mlx5_bond_0's port_xmit_data 250 words on.
func TestReplayOnAnyPlatform(t *testing.T) {
	file := writeBondReplay(t, []uint64{85378896588, 85378896838})

	cfg := createDefaultConfig().(*Config)
	cfg.Recording.Replay = file
	cfg.Include.Devices = []string{"mlx5_bond_0"}
	sc, err := newMetricsScraper(cfg, receivertest.NewNopSettings(metadata.Type))
	require.NoError(t, err)
	require.NoError(t, sc.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, sc.Shutdown(context.Background())) }()
	_, _ = sc.ScrapeMetrics(context.Background())
	md, _ := sc.ScrapeMetrics(context.Background())
	p, ok := metrictest.Find(md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit"))
	require.True(t, ok, "the replay is read")
	assert.Equal(t, int64(250*4), p.IntValue())
}

// TestReplayStampsRecordedTime: the points of a replay carry the times the samples were recorded
// at (internal/recording ReplayClock), so that a rate over a replay is the recorded one however
// late the scrapes run. The scraper's clock runs late by up to 900 ms (a loaded machine); the
// recorded samples are one second apart with 1000 words (4000 bytes) between them, so every
// interval's rate must be exactly 4000 B/s, where the scrapes' own times would give 4000/1.9 and
// then 4000/0.2.
func TestReplayStampsRecordedTime(t *testing.T) {
	file := writeBondReplay(t, []uint64{85378896588, 85378897588, 85378898588, 85378899588, 85378900588})

	late := []time.Duration{0, 900 * time.Millisecond, 100 * time.Millisecond, 600 * time.Millisecond, 0}
	start := time.Now()
	scrape := 0 // the scrape under way: the clock may be read more than once in one
	s, _ := newTestScraperWith(t, t.TempDir(), func(cfg *Config) {
		cfg.Recording.Replay = file
		cfg.Include.Devices = []string{"mlx5_bond_0"}
	}, func(s *rnicScraper) {
		s.clock = func() time.Time { return start.Add(time.Duration(scrape)*time.Second + late[scrape]) }
	})
	var prev pmetric.NumberDataPoint
	for i := range late {
		scrape = i
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		p, ok := metrictest.Find(md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit"))
		require.True(t, ok, "scrape %d", i)
		if i > 0 {
			dt := p.Timestamp().AsTime().Sub(prev.Timestamp().AsTime()).Seconds()
			assert.InDelta(t, 4000.0, float64(p.IntValue()-prev.IntValue())/dt, 1e-9, "rate of interval %d", i)
		}
		prev = p
	}
}

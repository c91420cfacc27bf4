//go:build linux

package rnicreceiver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"golang.org/x/sys/unix"

	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver/internal/metadata"
)

// TestRecordThenReplay records three scrapes of the synthetic node while its counters move (and
// one counter fails with EIO, and ethtool reports PFC pauses), then replays the recording into
// a fresh receiver: every interconnect.io, PFC and error outcome comes back the same.
func TestRecordThenReplay(t *testing.T) {
	root := t.TempDir()
	testfs.CopyTree(t, filepath.Join("testdata", "synthetic"), root)
	file := filepath.Join(t.TempDir(), "node1-rnic.jsonl.gz")
	live, _ := newTestScraper(t, root, func(cfg *Config) {
		cfg.Include.Devices = []string{"mlx5_bond_0", "mlx4_1"}
		cfg.Recording.Write = file
	})
	// The bond has no ethtool statistics; its member has (bonding/slaves of the fixture's bond0).
	fake := &fakeEthtool{stats: map[string]map[string]uint64{"ens1f0np0": {"rx_prio3_pause": 1, "tx_bytes_phy": 10}},
		drivers: map[string]string{"ens1f0np0": "mlx5_core"}}
	live.ethtool = &recordingEthtool{ethtoolStats: fake, r: live.rec}
	live.reader.OnOpen = func(p string) error {
		if strings.HasSuffix(p, "mlx4_1/ports/1/counters/symbol_error") {
			return unix.EIO
		}
		return nil
	}
	bond := "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_bond_0/ports/1/counters/"
	type snap struct{ tx, netdev, pause int64 }
	var want []snap
	for i := range 3 {
		testfs.SetUint(t, root, bond+"port_xmit_data", uint64(1000+i*250))
		testfs.SetUint(t, root, "sys/devices/virtual/net/bond0/statistics/tx_bytes", uint64(4000+i*300))
		fake.stats["ens1f0np0"]["rx_prio3_pause"] = uint64(1 + i*10)
		md, _ := live.scrape(context.Background())
		want = append(want, snap{
			tx:     value(t, md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit")),
			netdev: value(t, md, "interconnect.io", map[string]any{"component": "netdev", "device": "bond0", "direction": "transmit"}),
			pause:  value(t, md, "rnic.pfc.pause_frames", map[string]any{"device": "ens1f0np0", "priority": int64(3)}),
		})
	}
	require.NoError(t, live.shutdown(context.Background()))
	// Counted since the first scrape (metadata/start-time.md): 500 words, 600 bytes, 20 pauses.
	assert.Equal(t, snap{tx: 500 * 4, netdev: 600, pause: 20}, want[2])

	rec, err := recording.Open(file)
	require.NoError(t, err)
	assert.Equal(t, "rnic", rec.Header.Receiver)
	require.Len(t, rec.Samples(), 3)
	assert.Equal(t, "EIO", rec.Samples()[0].Errors["sys/class/infiniband/mlx4_1/ports/1/counters/symbol_error"])

	replay, _ := newTestScraper(t, filepath.Join(t.TempDir(), "unused"), func(cfg *Config) {
		cfg.Recording.Replay = file
		cfg.Ethtool.Enabled = true
	})
	for i := range 3 {
		md, err := replay.scrape(context.Background())
		if i == 0 {
			require.Error(t, err, "the recorded EIO is replayed")
			assert.Contains(t, err.Error(), "symbol_error")
		}
		assert.Equal(t, want[i].tx, value(t, md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit")), "scrape %d", i)
		assert.Equal(t, want[i].netdev, value(t, md, "interconnect.io", map[string]any{"component": "netdev", "device": "bond0", "direction": "transmit"}))
		assert.Equal(t, want[i].pause, value(t, md, "rnic.pfc.pause_frames", map[string]any{"device": "ens1f0np0", "priority": int64(3)}))
		if i == 0 {
			// rnic.port.info follows the slow cadence: the first scrape after discovery has it.
			assert.Equal(t, "0000:3b:00.0", mustAttr(t, md, "rnic.port.info", "mlx5_bond_0/1", "pci.bus_id"), "static facts come from the recorded tree")
		}
	}
	// Past the end of a non-looping replay the node keeps its last values.
	md, _ := replay.scrape(context.Background())
	assert.Equal(t, want[2].tx, value(t, md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit")))
	absent(t, md, "rnic.port.state", map[string]any{"device": "rxe0/1"})
}

// TestStartFailsOnBadRecording: asked for explicitly, a replay that cannot be read (missing, or
// recorded by another receiver) and a recording that cannot be created fail Start, naming the
// file, instead of a receiver that runs without what it was asked for.
func TestStartFailsOnBadRecording(t *testing.T) {
	dir := t.TempDir()
	gpu := filepath.Join(dir, "gpu.jsonl")
	w, err := recording.Create(gpu, recording.Header{Receiver: "gpu"})
	require.NoError(t, err)
	require.NoError(t, w.Write(recording.Record{Sample: []byte(`{}`)}))
	require.NoError(t, w.Close())
	missing := filepath.Join(dir, "missing.jsonl")
	uncreatable := filepath.Join(dir, "no", "such", "dir", "rnic.jsonl")
	for name, c := range map[string]struct {
		set  func(*recording.Settings)
		want string
	}{
		"replay of another receiver": {func(r *recording.Settings) { r.Replay = gpu }, `of the "gpu" receiver, not rnic`},
		"replay missing":             {func(r *recording.Settings) { r.Replay = missing }, missing},
		"recording uncreatable":      {func(r *recording.Settings) { r.Write = uncreatable }, uncreatable},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			cfg.RootPath = filepath.Join("testdata", "synthetic")
			c.set(&cfg.Recording)
			s := newScraper(cfg, receivertest.NewNopSettings(metadata.Type))
			err := s.start(context.Background(), componenttest.NewNopHost())
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			require.NoError(t, s.shutdown(context.Background()))
		})
	}
}

// TestRecordingOneFilePerStart: the recording is created once per start and every discovery
// after it (a device gone, another back) appends its tree to the same file: a rediscovery never
// truncates what was recorded before it.
func TestRecordingOneFilePerStart(t *testing.T) {
	root := fixtureCopy(t, filepath.Join("testdata", "synthetic"))
	file := filepath.Join(t.TempDir(), "node1-rnic.jsonl")
	s, _ := newTestScraper(t, root, func(cfg *Config) {
		cfg.Include.Devices = []string{"mlx5_bond_0", "mlx4_1"}
		cfg.Recording.Write = file
	})
	link := filepath.Join(root, "sys", "class", "infiniband", "mlx4_1")
	target, err := os.Readlink(link)
	require.NoError(t, err)
	_, _ = s.scrape(context.Background())
	require.NoError(t, os.Remove(link))
	s.slowAt = time.Time{}
	_, _ = s.scrape(context.Background()) // rediscovers without mlx4_1
	require.NoError(t, os.Symlink(target, link))
	s.slowAt = time.Time{}
	_, _ = s.scrape(context.Background()) // and with it again
	require.NoError(t, s.shutdown(context.Background()))

	rec, err := recording.Open(file)
	require.NoError(t, err)
	require.Len(t, rec.Samples(), 3, "every scrape's readings, in one file")
	trees := 0
	for _, r := range rec.Records {
		if r.Tree != nil {
			trees++
		}
	}
	assert.Equal(t, 3, trees, "one tree per discovery")
}

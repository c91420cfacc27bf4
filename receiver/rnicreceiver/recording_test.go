package rnicreceiver

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// TestRecordThenReplay records three scrapes of the synthetic node while its counters move (and
// one counter fails with EINVAL, and ethtool reports PFC pauses), then replays the recording into
// a fresh receiver: every interconnect.io, PFC and error outcome comes back the same.
func TestRecordThenReplay(t *testing.T) {
	root := t.TempDir()
	testfs.CopyTree(t, filepath.Join("testdata", "synthetic"), root)
	file := filepath.Join(t.TempDir(), "node1-rnic.jsonl.gz")
	live, _ := newTestScraper(t, root, func(cfg *Config) {
		cfg.IncludeDevices = []string{"mlx5_bond_0", "mlx4_1"}
		cfg.Recording.Write = file
	})
	// The bond has no ethtool statistics; its member has (bonding/slaves of the fixture's bond0).
	fake := &fakeEthtool{stats: map[string]map[string]uint64{"ens1f0np0": {"rx_prio3_pause": 1, "tx_bytes_phy": 10}},
		drivers: map[string]string{"ens1f0np0": "mlx5_core"}}
	live.ethtool = &recordingEthtool{ethtoolStats: fake, r: live.rec}
	live.reader.OnOpen = func(p string) error {
		if strings.HasSuffix(p, "mlx4_1/ports/1/counters/symbol_error") {
			return unix.EINVAL
		}
		return nil
	}
	bond := "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_bond_0/ports/1/counters/"
	type snap struct{ tx, netdev, pause int64 }
	var want []snap
	for i := range 3 {
		testfs.SetUint(t, root, bond+"port_xmit_data", uint64(1000+i*250))
		fake.stats["ens1f0np0"]["rx_prio3_pause"] = uint64(1 + i*10)
		md, _ := live.scrape(context.Background())
		want = append(want, snap{
			tx:     value(t, md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit")),
			netdev: value(t, md, "interconnect.io", map[string]any{"component": "netdev", "device": "bond0", "direction": "transmit"}),
			pause:  value(t, md, "rnic.pfc.pause_frames", map[string]any{"device": "ens1f0np0", "priority": int64(3)}),
		})
	}
	require.NoError(t, live.shutdown(context.Background()))
	assert.Equal(t, int64((1000+500)*4), want[2].tx)

	rec, err := recording.Open(file)
	require.NoError(t, err)
	assert.Equal(t, "rnic", rec.Header.Receiver)
	require.Len(t, rec.Samples(), 3)
	assert.Equal(t, "EINVAL", rec.Samples()[0].Errors["sys/class/infiniband/mlx4_1/ports/1/counters/symbol_error"])

	replay, _ := newTestScraper(t, filepath.Join(t.TempDir(), "unused"), func(cfg *Config) {
		cfg.Recording.Replay = file
		cfg.Ethtool.Enabled = true
	})
	for i := range 3 {
		md, err := replay.scrape(context.Background())
		if i == 0 {
			require.Error(t, err, "the recorded EINVAL is replayed")
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

func TestReplayRefusesOtherReceivers(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gpu.jsonl")
	w, err := recording.Create(file, recording.Header{Receiver: "gpu"})
	require.NoError(t, err)
	require.NoError(t, w.Write(recording.Record{Sample: []byte(`{}`)}))
	require.NoError(t, w.Close())
	cfg := createDefaultConfig().(*Config)
	cfg.Recording.Replay = file
	_, err = newRNICReplay(cfg)
	assert.ErrorContains(t, err, `of the "gpu" receiver, not rnic`)
}

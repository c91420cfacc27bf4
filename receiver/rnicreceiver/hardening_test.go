//go:build linux

package rnicreceiver

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	"golang.org/x/sys/unix"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// TestLinkOutsideRootNotRead: the kernel links /sys/class/infiniband/<dev> relatively
// (../../devices/..., drivers/base/core.c device_add_class_symlinks); an absolute link there leads
// out of root_path. Nothing it leads to is read: a mode-0600 fw_ver outside root_path, which the
// collector's user could read, never becomes rnic.port.info's fw_version. The real device beside
// it is read as usual.
func TestLinkOutsideRootNotRead(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, testfs.WriteRDMANode(root, testfs.MultiPlaneRDMANode()[:1]))
	outside := t.TempDir()
	require.NoError(t, testfs.WriteRDMANode(outside, []testfs.RDMADevice{{Name: "evil", InClass: true,
		Attrs: map[string]string{"fw_ver": "SECRET"},
		Ports: []testfs.RDMAPort{{Num: 1, LinkLayer: "InfiniBand", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "400 Gb/sec (4X NDR)",
			Counters: testfs.ExtendedCounters(1, 2, 3, 4)}}}}))
	secret := filepath.Join(outside, "sys", "class", "infiniband", "evil")
	require.NoError(t, os.Chmod(filepath.Join(secret, "fw_ver"), 0o600))
	require.NoError(t, os.Symlink(secret, filepath.Join(root, "sys", "class", "infiniband", "evil")))

	s, _ := newTestScraper(t, root, nil)
	var opened []string
	s.reader.OnOpen = func(p string) error { opened = append(opened, p); return nil }
	md, err := s.scrape(context.Background())
	require.Error(t, err, "the device outside root_path is an error naming it")
	assert.Contains(t, err.Error(), "outside the directory the reads are confined to")
	for _, dp := range metrictest.Points(md, "rnic.port.info") {
		for _, v := range dp.Attributes().All() {
			assert.NotContains(t, v.AsString(), "SECRET")
		}
	}
	absent(t, md, "rnic.port.state", map[string]any{"device": "evil/1"})
	assert.Equal(t, "40.44.1036", mustAttr(t, md, "rnic.port.info", "mlx5_0/1", "fw_version"))
	assert.NotEmpty(t, opened)
}

// TestFIFOAsFwVerSaidOnce: every sysfs attribute is a regular file (kernfs); a named pipe in place
// of fw_ver is not read (sysfs.Reader refuses it without blocking) and is said once, naming the
// file, instead of an empty fw_version without a word.
func TestFIFOAsFwVerSaidOnce(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, testfs.WriteRDMANode(root, testfs.MultiPlaneRDMANode()[:1]))
	fw := filepath.Join(root, "sys", "class", "infiniband", "mlx5_0", "fw_ver")
	real, err := filepath.EvalSymlinks(fw)
	require.NoError(t, err)
	require.NoError(t, os.Remove(real))
	require.NoError(t, unix.Mkfifo(real, 0o644))

	s, logs := newTestScraper(t, root, nil)
	_, err = s.scrape(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fw_ver")
	assert.Contains(t, err.Error(), "not a regular file")
	for range 5 {
		_, _ = s.scrape(context.Background())
	}
	md, _ := scrapeGrown(t, s, root)
	said := logs.FilterLevelExact(zapcore.WarnLevel).FilterMessage("Read failed; its points are missing").All()
	require.Len(t, said, 1, "said once")
	assert.Contains(t, said[0].ContextMap()["error"], "fw_ver")
	assert.Equal(t, "", mustAttr(t, md, "rnic.port.info", "mlx5_0/1", "fw_version"))
}

// TestOwnLogBoundedPerScrape: a counter that fails on every scrape is logged when it starts
// failing, not on every scrape: 200 scrapes write no more of the receiver's own lines than 2.
// (The collector's scraper controller logs each failed scrape itself; collection_interval's
// minimum, Validate, bounds that.)
func TestOwnLogBoundedPerScrape(t *testing.T) {
	root := fixtureCopy(t, filepath.Join("testdata", "synthetic"))
	s, logs := newTestScraper(t, root, func(cfg *Config) { cfg.SlowInterval = 0 })
	s.reader.OnOpen = func(p string) error {
		if filepath.Base(p) == "port_xmit_data" {
			return unix.EIO
		}
		return nil
	}
	for range 2 {
		_, err := s.scrape(context.Background())
		require.Error(t, err)
	}
	after2 := logs.Len()
	for range 198 {
		_, _ = s.scrape(context.Background())
	}
	assert.Equal(t, after2, logs.Len())
}

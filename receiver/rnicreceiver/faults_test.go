//go:build linux

package rnicreceiver

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// TestStuckDeviceSkippedOthersRead: a read of mlx5_4 blocks, as a sysfs read does behind hung
// firmware (mlx5 cmd.c waits for the firmware's answer). The scrape returns by read_timeout, names
// the device once, and the other devices are read on this scrape and the next; shutdown does not
// wait for the blocked read; when it returns the device is read again.
func TestStuckDeviceSkippedOthersRead(t *testing.T) {
	root := fixtureCopy(t, filepath.Join("testdata", "synthetic"))
	// read_timeout 5 s: every device is read on its own goroutine within it, and one that is not
	// is stuck; beside other load or under emulation an ordinary read has taken more than 200 ms
	// (#27: a second device stuck, and said to return, in qemu beside stress-ng).
	s, logs := newTestScraper(t, root, func(cfg *Config) {
		cfg.ReadTimeout = 5 * time.Second
	})
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	// Discovery first (it reads on the scrape's goroutine, and it is every series' baseline under
	// the start-time rule); the counters then grow by the fixture's values and the reads block.
	_, _ = s.scrape(context.Background())
	testfs.GrowCounters(t, root)
	s.reader.OnOpen = func(p string) error {
		if strings.Contains(p, "/mlx5_4/ports/3/counters/") {
			<-release
		}
		return nil
	}

	// The scrape waits for the stuck device only until read_timeout: one that waited for the read
	// would not return at all. A minute is a deadline for a busy machine, not a speed.
	md, err := scrapeWithin(t, s, time.Minute, "the scrape waited for the stuck device past read_timeout")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mlx5_4: reads did not return within 5s")
	// The other devices were read; the stuck one's series are not reported from half a read.
	assert.Equal(t, int64(85378896588*4), value(t, md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit")))
	assert.Equal(t, int64(4000), value(t, md, "interconnect.io", map[string]any{"component": "netdev", "device": "bond0", "direction": "transmit"}))
	absent(t, md, "rnic.port.state", map[string]any{"device": "mlx5_4/1"})

	// Still stuck: skipped at once, and returned as an error again (its points are missing). With
	// read_timeout an hour, a scrape that waited for it again would not return within the minute.
	s.cfg.ReadTimeout = time.Hour
	md, err = scrapeWithin(t, s, time.Minute, "a device still stuck was waited for again")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mlx5_4: reads blocked since", "returned on every scrape it costs")
	assert.Equal(t, int64(85378896588*4), value(t, md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit")))

	// The read returns: the device is read again, and that is said once. (read_timeout stays an
	// hour, so that a slow ordinary read cannot make the device stuck, and then returned, once more.)
	unblock()
	require.Eventually(t, func() bool {
		md, _ = s.scrape(context.Background())
		_, ok := metrictest.Find(md, "rnic.port.state", map[string]any{"device": "mlx5_4/1"})
		return ok
	}, time.Minute, 50*time.Millisecond, "mlx5_4 is read again once its reads return")
	assert.Equal(t, 1, logs.FilterMessage("reads of the device returned; reading it again").
		FilterField(zap.String("device", "mlx5_4")).Len(), "said once")
}

// TestShutdownDoesNotWaitForStuckRead: the receiver's shutdown returns while a read is blocked.
func TestShutdownDoesNotWaitForStuckRead(t *testing.T) {
	s, _ := newTestScraper(t, filepath.Join("testdata", "synthetic"), func(cfg *Config) {
		cfg.ReadTimeout = 100 * time.Millisecond
	})
	release := make(chan struct{})
	defer close(release)
	_, _ = s.scrape(context.Background())
	s.reader.OnOpen = func(p string) error {
		if strings.Contains(p, "/mlx5_bond_0/") && strings.Contains(p, "/counters/") {
			<-release
		}
		return nil
	}
	_, err := s.scrape(context.Background())
	require.Error(t, err)
	done := make(chan error, 1)
	go func() { done <- s.shutdown(context.Background()) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		// The read stays stuck until the test ends: a shutdown that waited for it would not
		// return at all. A minute is a deadline for a busy machine, not a speed.
		t.Fatal("shutdown waits for a stuck read")
	}
}

// TestNumbersThatCannotBeServed: a 64-bit PMA data counter (mlx5_bond_0's extended table) at 2^61
// counts 2^63 octets after the x4 of its unit, and all ones would be -4 as an int64 point: both
// are flagged (rnic.counter.saturated 1), never served as traffic. mlx4_1/2's 32-bit
// port_xmit_data leaves saturation (perfquery -R): the flag drops to 0 and the bytes are served.
func TestNumbersThatCannotBeServed(t *testing.T) {
	root := t.TempDir()
	testfs.CopyTree(t, filepath.Join("testdata", "synthetic"), root)
	s, _ := newTestScraper(t, root, func(cfg *Config) { cfg.SlowInterval = 0 })
	bond := "sys/class/infiniband/mlx5_bond_0/ports/1/counters/port_xmit_data"
	saturated := func(md pmetric.Metrics, dev string) (int64, bool) {
		dp, ok := metrictest.Find(md, "rnic.counter.saturated", map[string]any{"device": dev, "counter": "port_xmit_data"})
		return dp.IntValue(), ok
	}

	md, _ := s.scrape(context.Background())
	v, ok := saturated(md, "mlx4_1/2")
	require.True(t, ok)
	assert.Equal(t, int64(1), v)
	_, ok = saturated(md, "mlx5_bond_0/1")
	assert.False(t, ok)

	// The first scrape is the baseline (metadata/start-time.md): what is scaled is the count since,
	// so the extended counter must move 2^61 past its fixture value to count 2^63 octets.
	const bondBaseline = 85378896588
	for _, raw := range []uint64{bondBaseline + 1<<61, math.MaxUint64} {
		testfs.SetUint(t, root, bond, raw)
		md, _ = s.scrape(context.Background())
		absent(t, md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit"))
		v, ok = saturated(md, "mlx5_bond_0/1")
		require.True(t, ok, "%d is flagged", raw)
		assert.Equal(t, int64(1), v)
	}
	testfs.SetUint(t, root, bond, 1000) // a reset: representable again
	testfs.SetUint(t, root, "sys/class/infiniband/mlx4_1/ports/2/counters/port_xmit_data", 5000)
	md, _ = s.scrape(context.Background())
	assert.Equal(t, int64(4000), value(t, md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit")))
	assert.Equal(t, int64(20000), value(t, md, "interconnect.io", rnicIO("mlx4_1/2", "transmit")))
	for _, dev := range []string{"mlx4_1/2", "mlx5_bond_0/1"} {
		v, ok = saturated(md, dev)
		require.True(t, ok, dev)
		assert.Equal(t, int64(0), v, "%s left saturation", dev)
	}
}

// TestSaturationFlagSurvivesRediscovery: the scraper carries what it knows of a series across a
// rediscovery by series key. mlx4_1/2's 32-bit port_xmit_data is stuck at all ones (flagged 1);
// in the scrape where another device (rxe0) goes away, and the plan is rebuilt, the counter is
// cleared (perfquery -R): the new plan still knows the series was flagged, so the flag drops to 0
// instead of vanishing.
func TestSaturationFlagSurvivesRediscovery(t *testing.T) {
	root := fixtureCopy(t, filepath.Join("testdata", "synthetic"))
	s, _ := newTestScraper(t, root, nil)
	sel := map[string]any{"device": "mlx4_1/2", "counter": "port_xmit_data"}
	md, _ := s.scrape(context.Background())
	assert.Equal(t, int64(1), value(t, md, "rnic.counter.saturated", sel))

	require.NoError(t, os.Remove(filepath.Join(root, "sys", "class", "infiniband", "rxe0")))
	testfs.SetUint(t, root, "sys/class/infiniband/mlx4_1/ports/2/counters/port_xmit_data", 5000)
	s.slowAt = time.Time{} // the device list is read with the slow counters
	md, _ = s.scrape(context.Background())
	absent(t, md, "rnic.port.state", map[string]any{"device": "rxe0/1"})
	assert.Equal(t, int64(0), value(t, md, "rnic.counter.saturated", sel), "the flag outlives the plan")
	assert.Equal(t, int64(20000), value(t, md, "interconnect.io", rnicIO("mlx4_1/2", "transmit")))
}

// TestVanishedDeviceKernfsENODEV: mlx4_1 is removed while its counters are kept open. The fixture
// answers those reads as sysfs does, with ENODEV (testfs.KernfsRemoved), not with the deleted
// file's old content: the receiver rediscovers at once, and from the next scrape on reports no
// mlx4_1 series while the other devices keep theirs.
func TestVanishedDeviceKernfsENODEV(t *testing.T) {
	root := t.TempDir()
	testfs.CopyTree(t, filepath.Join("testdata", "synthetic"), root)
	s, _ := newTestScraper(t, root, nil)
	s.reader.OnOpen = testfs.KernfsRemoved
	md, _ := s.scrape(context.Background()) // the baseline (metadata/start-time.md)
	assert.Equal(t, int64(0), value(t, md, "interconnect.io", rnicIO("mlx4_1/1", "transmit")))
	md, _ = scrapeGrown(t, s, root)
	assert.Equal(t, int64(4000), value(t, md, "interconnect.io", rnicIO("mlx4_1/1", "transmit")))
	require.NotZero(t, s.keptFiles())

	dev, err := filepath.EvalSymlinks(filepath.Join(root, "sys", "class", "infiniband", "mlx4_1"))
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(root, "sys", "class", "infiniband", "mlx4_1")))
	require.NoError(t, os.RemoveAll(dev))

	md, err = s.scrape(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no such device", "the kept descriptors answer ENODEV")
	absent(t, md, "interconnect.io", rnicIO("mlx4_1/1", "transmit"))
	md, _ = s.scrape(context.Background())
	absent(t, md, "interconnect.io", rnicIO("mlx4_1/1", "transmit"))
	absent(t, md, "rnic.port.state", map[string]any{"device": "mlx4_1/2"})
	assert.Equal(t, int64(85378896588*4), value(t, md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit")))
	assert.NotContains(t, s.plan.devices, "mlx4_1", "rediscovered without the device")
}

// TestSilentLossesAreSaid: what used to cost series without a word is said, naming what failed.
func TestSilentLossesAreSaid(t *testing.T) {
	t.Run("root_path missing", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "hostfs")
		_, logs := newTestScraper(t, missing, nil)
		w := logs.FilterMessage("root_path does not exist or is not a directory; nothing will be found until it does")
		require.Equal(t, 1, w.Len())
		assert.Equal(t, missing, w.All()[0].ContextMap()["root_path"])
	})
	t.Run("unreadable counter directory", func(t *testing.T) {
		root := t.TempDir()
		testfs.CopyTree(t, filepath.Join("testdata", "synthetic"), root)
		// A directory that cannot be listed (ENOTDIR here; EACCES under an LSM, which root
		// would bypass in this test).
		hw := filepath.Join(root, "sys", "class", "infiniband", "mlx4_1", "ports", "1", "counters")
		real, err := filepath.EvalSymlinks(hw)
		require.NoError(t, err)
		require.NoError(t, os.RemoveAll(real))
		require.NoError(t, os.WriteFile(real, nil, 0o444))
		s, _ := newTestScraper(t, root, nil)
		md, err := s.scrape(context.Background())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "cannot list "+hw)
		assert.Equal(t, int64(4), value(t, md, "rnic.port.state", map[string]any{"device": "mlx4_1/1"}), "the port itself is kept")
	})
	t.Run("port added to a known device", func(t *testing.T) {
		root := t.TempDir()
		testfs.CopyTree(t, filepath.Join("testdata", "synthetic"), root)
		s, _ := newTestScraper(t, root, func(cfg *Config) { cfg.SlowInterval = 0 })
		md, _ := s.scrape(context.Background())
		absent(t, md, "rnic.port.state", map[string]any{"device": "mlx4_1/3"})
		ports := filepath.Join(root, "sys", "class", "infiniband", "mlx4_1", "ports")
		testfs.CopyTree(t, filepath.Join(ports, "2"), filepath.Join(ports, "3"))
		md, _ = s.scrape(context.Background())
		assert.Equal(t, int64(4), value(t, md, "rnic.port.state", map[string]any{"device": "mlx4_1/3"}))
	})
	t.Run("netdev names from file contents", func(t *testing.T) {
		root := t.TempDir()
		testfs.CopyTree(t, filepath.Join("testdata", "synthetic"), root)
		ndev := filepath.Join(root, "sys", "class", "infiniband", "mlx5_bond_0", "ports", "1", "gid_attrs", "ndevs", "0")
		require.NoError(t, os.WriteFile(ndev, []byte("../../../../etc\n"), 0o444))
		parent := filepath.Join(root, "sys", "class", "infiniband", "rxe0", "parent")
		require.NoError(t, os.WriteFile(parent, []byte("a/../../b\n"), 0o444))
		// rxe0 names its netdev in its GID table too; without it, parent is what is read.
		require.NoError(t, os.RemoveAll(filepath.Join(root, "sys", "class", "infiniband", "rxe0", "ports", "1", "gid_attrs", "ndevs")))
		s, _ := newTestScraper(t, root, nil)
		md, err := s.scrape(context.Background())
		require.Error(t, err)
		assert.Contains(t, err.Error(), ndev+`: unexpected value "../../../../etc": not a network device name`)
		assert.Contains(t, err.Error(), parent+`: unexpected value "a/../../b": not a network device name`)
		assert.NotEqual(t, "../../../../etc", mustAttr(t, md, "rnic.port.info", "mlx5_bond_0/1", "netdev"))
		for _, name := range []string{"eth0", "bond0", "ens1f0np0", "a.b-c_d@e"} {
			assert.True(t, validNetdevName(name), name)
		}
		for _, name := range []string{"", ".", "..", "a/b", "a:b", "a b", "0123456789abcdef"} {
			assert.False(t, validNetdevName(name), name)
		}
	})
}

// TestScrapeErrorsCapped: a failure of every counter on every port (an LSM denying the whole
// class directory) yields one error of bounded length: 20 failures named, the rest counted.
func TestScrapeErrorsCapped(t *testing.T) {
	s, _ := newTestScraper(t, filepath.Join("testdata", "synthetic"), nil)
	s.reader.OnOpen = func(p string) error {
		if strings.Contains(p, "/counters/") || strings.Contains(p, "/hw_counters/") {
			return unix.EACCES
		}
		return nil
	}
	_, err := s.scrape(context.Background())
	require.Error(t, err)
	// multierr joins the listed errors with "; " (a discovery error may itself hold several).
	assert.Equal(t, maxListedErrors+1, strings.Count(err.Error(), "; ")+1, "20 listed and the count of the rest")
	assert.Regexp(t, `and \d+ more failures, not listed here`, err.Error())
}

// TestKeptFilesCapped: the descriptors kept open never pass the cap; the files past it are still
// read (open-read-close), so every port keeps its series.
func TestKeptFilesCapped(t *testing.T) {
	root := fixtureCopy(t, filepath.Join("testdata", "synthetic"))
	s, _ := newTestScraper(t, root, nil)
	s.reader.SetMaxKept(10)
	// The first scrape is the baseline (metadata/start-time.md); the second reads the grown
	// counters, kept and past the cap alike.
	md, _ := s.scrape(context.Background())
	assert.Equal(t, int64(0), value(t, md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit")))
	assert.Equal(t, int64(0), value(t, md, "interconnect.io", rnicIO("mlx4_1/1", "transmit")))
	md, _ = scrapeGrown(t, s, root)
	assert.Equal(t, int64(85378896588*4), value(t, md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit")))
	assert.Equal(t, int64(4000), value(t, md, "interconnect.io", rnicIO("mlx4_1/1", "transmit")))
	assert.Equal(t, 10, s.keptFiles())
}

// TestNamedPipesNeverBlockDiscovery: named pipes in place of a port's counters/ directory, of a
// device's ports/ directory and of a file read outside the Reader (/proc/sys/kernel/osrelease, read
// for the topology) are refused at once, naming them; the rest of the node is scraped.
func TestNamedPipesNeverBlockDiscovery(t *testing.T) {
	root := t.TempDir()
	testfs.CopyTree(t, filepath.Join("testdata", "synthetic"), root)
	fifo := func(rel string) string {
		p, err := filepath.EvalSymlinks(filepath.Join(root, rel))
		require.NoError(t, err)
		require.NoError(t, os.RemoveAll(p))
		require.NoError(t, unix.Mkfifo(p, 0o644))
		return filepath.Join(root, rel)
	}
	counters := fifo("sys/class/infiniband/mlx4_1/ports/1/counters")
	ports := fifo("sys/class/infiniband/rxe0/ports")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "proc", "sys", "kernel"), 0o755))
	require.NoError(t, unix.Mkfifo(filepath.Join(root, "proc", "sys", "kernel", "osrelease"), 0o644))

	s, _ := newTestScraper(t, root, nil)
	done := make(chan struct{})
	var md pmetric.Metrics
	var err error
	go func() {
		defer close(done)
		md, err = s.scrape(context.Background())
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		// An open of a FIFO with no writer never returns: a minute is a deadline, not a speed.
		t.Fatal("a named pipe blocks discovery")
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), counters)
	assert.Contains(t, err.Error(), ports)
	assert.Equal(t, int64(0), value(t, md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit")), "the baseline")
	md, _ = scrapeGrown(t, s, root)
	assert.Equal(t, int64(85378896588*4), value(t, md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit")))
}

package cpuuncorereceiver

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"syscall"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap/zapcore"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/perf"
)

// Under a hypervisor the Intel uncore driver refuses to load (uncore.c intel_uncore_init:
// X86_FEATURE_HYPERVISOR -> -ENODEV): the receiver says so once, at info level, emits nothing,
// returns no error and keeps looking.
func TestNoUncoreUnderHypervisor(t *testing.T) {
	ts := newTestScraper(t, "vm", nil)
	infos := messages(ts.logs, zapcore.InfoLevel)
	require.Len(t, infos, 1, "%v", infos)
	assert.Contains(t, infos[0], "no usable uncore PMU")
	assert.Contains(t, infos[0], "pmus=uncore_imc / amd_umc / uncore_iio_free_running")
	assert.Contains(t, infos[0], "running under a hypervisor")
	assert.Equal(t, zapcore.InfoLevel, ts.logs.All()[0].Level)

	for i := 0; i < 5; i++ {
		ts.tick(30 * time.Second)
		md, err := ts.scrape(t.Context())
		require.NoError(t, err)
		assert.Zero(t, md.DataPointCount())
	}
	assert.Len(t, ts.logs.All(), 1, "no repeated log lines")
	assert.Zero(t, ts.fake.opened)
}

// copyFixture copies a fixture so that a test can change it (PMU removed, CPU offlined).
func copyFixture(t *testing.T, name string) string {
	dst := filepath.Join(t.TempDir(), name)
	out, err := exec.Command("cp", "-a", filepath.Join("testdata", name), dst).CombinedOutput()
	require.NoError(t, err, string(out))
	return dst
}

// A PMU that disappears (driver unloaded) and a cpumask that changes (the die's collecting CPU
// went offline; the kernel moves the box to another CPU of the die, uncore.c
// uncore_event_cpu_offline) are survived: the failing group's series is skipped with one error,
// and rediscovery picks up the new layout.
func TestPMUDisappearsAndCPUHotplug(t *testing.T) {
	root := copyFixture(t, "skx")
	ts := newTestScraper(t, "skx", func(c *Config) {
		c.RootPath = root
		c.PCIe.Enabled = false
		c.Memory.Granularity = GranularityController
	})
	require.Equal(t, 12, ts.fake.opened)

	// uncore_imc_5 goes away; CPU 28 goes offline and uncore_imc_0's box moves to CPU 29.
	gone := filepath.Join(root, "sys/bus/event_source/devices/uncore_imc_5")
	require.NoError(t, os.Remove(gone))
	require.NoError(t, os.RemoveAll(filepath.Join(root, "sys/devices/uncore_imc_5")))
	require.NoError(t, os.WriteFile(filepath.Join(root, "sys/devices/uncore_imc_0/cpumask"), []byte("0,29\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sys/devices/system/cpu/cpu29/topology"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "sys/devices/system/cpu/cpu29/topology/physical_package_id"), []byte("1\n"), 0o644))
	require.NoError(t, os.Symlink("../../node/node1", filepath.Join(root, "sys/devices/system/cpu/cpu29/node1")))
	ts.fake.readErr = func(cpu int, attrs []perf.Attr) error {
		if attrs[0].Type == skxIMC0+5 || (attrs[0].Type == skxIMC0 && cpu == 28) {
			return syscall.ENODEV
		}
		return nil
	}
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.Error(t, err)
	got := ioPoints(t, md)
	assert.NotContains(t, got, io("cpu_memory", "read", "socket0/imc5", "", 0))
	assert.NotContains(t, got, io("cpu_memory", "read", "socket1/imc0", "", 1))
	assert.Contains(t, got, io("cpu_memory", "read", "socket1/imc1", "", 1))

	ts.tick(time.Minute)
	_, err = ts.scrape(t.Context()) // reads, then rediscovers
	require.Error(t, err, "the groups not open are still a failure of this scrape")
	assert.Equal(t, 6, partialFailed(t, err), "read and write of imc5 on both sockets and of imc0 on socket 1, not open")
	assert.Equal(t, [][]uint64{{skxCASRead, skxCASWrite}}, ts.fake.openAttrs(skxIMC0, 29), "reopened on the new cpumask CPU")
	ts.fake.add(29, skxIMC0, skxCASRead, 2)
	ts.tick(5 * time.Second)
	md, err = ts.scrape(t.Context())
	require.NoError(t, err)
	got = ioPoints(t, md)
	assert.NotContains(t, got, io("cpu_memory", "read", "socket0/imc5", "", 0), "the PMU is gone")
	assert.Equal(t, int64(2*64), got[io("cpu_memory", "read", "socket1/imc0", "", 1)].value)
	assert.Len(t, got, 2*5*2)
	open := 0
	for _, g := range ts.fake.groups {
		if !g.closed {
			open++
		}
	}
	assert.Equal(t, 10, open, "no leaked groups")
}

// Controller granularity and the Zen 4 layout: amd_umc_0..11 on socket 0 (cpumask 0),
// amd_umc_12..23 on socket 1 (cpumask 96), each its own series.
func TestControllerGranularityZen4(t *testing.T) {
	ts := newTestScraper(t, "zen4", func(c *Config) { c.Memory.Granularity = GranularityController })
	ts.fake.add(96, 20+13, 0x20a, 8)
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	got := ioPoints(t, md)
	assert.Len(t, got, 24*2)
	assert.Equal(t, int64(8*64), got[io("cpu_memory", "write", "socket1/umc13", "", 1)].value)
	assert.Contains(t, got, io("cpu_memory", "read", "socket0/umc0", "", 0))
	assert.NotContains(t, got, io("cpu_memory", "read", "socket0/umc12", "", 0))
}

// Event overrides replace a domain's built-in table: a raw encoding with its size, and an alias
// whose size comes from the kernel's .scale/.unit.
func TestEventOverrides(t *testing.T) {
	ts := newTestScraper(t, "skx", func(c *Config) {
		c.PCIe.Enabled = false
		c.Events = []EventConfig{
			{Domain: "memory", PMU: "uncore_imc", Event: "event=0x04,umask=0x0f", Direction: "read", BytesPerCount: 64},
			{Domain: "memory", PMU: "uncore_imc", Event: "cas_count_write", Direction: "write"},
		}
	})
	assert.Equal(t, [][]uint64{{0x0f04, skxCASWrite}}, ts.fake.openAttrs(skxIMC0, 0))
	ts.fake.add(0, skxIMC0, 0x0f04, 1)
	ts.fake.add(0, skxIMC0, skxCASWrite, 2)
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	got := ioPoints(t, md)
	assert.Equal(t, int64(64), got[io("cpu_memory", "read", "socket0/imc", "", 0)].value)
	assert.Equal(t, int64(128), got[io("cpu_memory", "write", "socket0/imc", "", 0)].value)

	// An override naming an alias the kernel lacks costs that event, with an error naming it.
	bad := newTestScraper(t, "skx", func(c *Config) {
		c.PCIe.Enabled = false
		c.Events = []EventConfig{{Domain: "memory", PMU: "uncore_imc", Event: "no_such_event", Direction: "read"}}
	})
	assert.NotEmpty(t, logged(bad, zapcore.WarnLevel, "PMU uncore_imc_0 has no event no_such_event"))
	assert.Zero(t, bad.fake.opened)
}

// Every fixture: which PMUs are found, how many groups open, and the series produced.
func TestDiscoveryFixtures(t *testing.T) {
	for _, tc := range []struct {
		fixture       string
		platform      string
		groups        int
		memory, pcie  int
		memSeries     []string
		pcieSeries    []string
		bytesPerCount map[scaleKey]float64
	}{
		{"skx", "skx", 36, 6, 12, []string{"socket0/imc", "socket1/imc"}, []string{"socket0/iio0", "socket1/iio5"},
			map[scaleKey]float64{{"uncore_imc_0", "cas_count_read", "sysfs"}: 64, {"uncore_iio_free_running_0", "bw_in_port3", "sysfs"}: 4}},
		{"icx", "icx", 48, 12, 12, []string{"socket0/imc", "socket1/imc"}, []string{"socket0/iio5", "socket1/iio0"},
			map[scaleKey]float64{{"uncore_imc_11", "cas_count_write", "sysfs"}: 64, {"uncore_iio_free_running_5", "bw_in_port7", "sysfs"}: 32}},
		{"spr", "spr", 64, 8, 24, []string{"socket0/imc", "socket1/imc"}, []string{"socket0/iio11", "socket1/iio0"},
			map[scaleKey]float64{{"uncore_imc_7", "cas_count_read", "sysfs"}: 64, {"uncore_iio_free_running_11", "bw_in_port0", "sysfs"}: 32}},
		{"gnr", "gnr", 48, 12, 12, []string{"socket0/imc", "socket1/imc"}, []string{"socket0/iio0"},
			map[scaleKey]float64{{"uncore_imc_11", "cas_count_write_sch1", "sysfs"}: 64}},
		{"zen4", "zen4", 24, 24, 0, []string{"socket0/umc", "socket1/umc"}, nil,
			map[scaleKey]float64{{"amd_umc_23", "event=0x0a,rdwrmask=0x2", "builtin"}: 64}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			ts := newTestScraper(t, tc.fixture, withScales)
			assert.Equal(t, tc.platform, ts.plat.name)
			assert.Equal(t, tc.groups, ts.fake.opened)
			assert.Equal(t, tc.memory, ts.plan.memoryPMUs)
			assert.Equal(t, tc.pcie, ts.plan.pciePMUs)
			assert.Empty(t, messages(ts.logs, zapcore.WarnLevel))
			info := messages(ts.logs, zapcore.InfoLevel)
			require.Len(t, info, 1)
			assert.True(t, strings.HasPrefix(info[0], "Collecting uncore counters"), info[0])

			ts.tick(5 * time.Second)
			md, err := ts.scrape(t.Context())
			require.NoError(t, err)
			got := ioPoints(t, md)
			for _, dev := range tc.memSeries {
				n := int64(dev[len("socket")] - '0')
				assert.Contains(t, got, io("cpu_memory", "read", dev, "", n))
				assert.Contains(t, got, io("cpu_memory", "write", dev, "", n))
			}
			for _, dev := range tc.pcieSeries {
				n := int64(dev[len("socket")] - '0')
				assert.Contains(t, got, io("cpu_pcie", "receive", dev, "", n))
			}
			sc := scales(md)
			for k, v := range tc.bytesPerCount {
				assert.Equal(t, v, sc[k], "%v in %v", k, sc)
			}
		})
	}
}

// resctrl MBM is the last resort where no memory PMU exists: one combined byte counter per L3
// domain, reported as cpuuncore.memory.io with its limits logged once; a remount (counter back
// to a lower value) starts a new series, "Unavailable" costs that domain for that scrape.
func TestResctrlFallback(t *testing.T) {
	root := copyFixture(t, "resctrl")
	ts := newTestScraper(t, "resctrl", func(c *Config) { c.RootPath = root })
	require.Len(t, logged(ts, zapcore.InfoLevel, "falling back to resctrl MBM"), 1)
	assert.Contains(t, logged(ts, zapcore.InfoLevel, "falling back")[0], "no device DMA")

	memIO := func() map[string]point {
		ts.tick(5 * time.Second)
		md, err := ts.scrape(t.Context())
		out := map[string]point{}
		for _, dp := range metrictest.Points(md, "cpuuncore.memory.io") {
			d, _ := dp.Attributes().Get("device")
			out[d.Str()] = point{dp.IntValue(), dp.StartTimestamp()}
		}
		if err != nil {
			out["error"] = point{}
			t.Log(err)
		}
		return out
	}
	// The start-time rule (metadata/start-time.md): mbm_total_bytes counts since the mount, a
	// moment before the series began, so the first point is 0 at the first reading.
	first := memIO()
	assert.Equal(t, int64(0), first["l3domain0/mbm"].value)
	assert.Equal(t, int64(0), first["l3domain1/mbm"].value)
	assert.Equal(t, pcommon.NewTimestampFromTime(ts.clock), first["l3domain0/mbm"].start)

	file := func(d, v string) {
		require.NoError(t, os.WriteFile(filepath.Join(root, "sys/fs/resctrl/mon_data/mon_L3_"+d+"/mbm_total_bytes"), []byte(v), 0o644))
	}
	file("00", "5000\n")
	file("01", "Unavailable\n")
	got := memIO()
	assert.Equal(t, int64(4000), got["l3domain0/mbm"].value, "bytes since the first reading")
	assert.Equal(t, first["l3domain0/mbm"].start, got["l3domain0/mbm"].start)
	assert.NotContains(t, got, "l3domain1/mbm")
	assert.Contains(t, got, "error")

	file("00", "10\n") // remounted
	file("01", "2000\n")
	got = memIO()
	assert.Equal(t, int64(10), got["l3domain0/mbm"].value)
	assert.Greater(t, got["l3domain0/mbm"].start, first["l3domain0/mbm"].start, "a new series after the reset")
	assert.NotContains(t, got, "error")
}

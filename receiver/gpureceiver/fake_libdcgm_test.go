//go:build linux && cgo

package gpureceiver

import (
	"bytes"
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-iclens/otelcol-iclens/internal/fakedcgm"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver/internal/metadata"
)

// These tests run go-dcgm's real cgo path (dlopen("libdcgm.so.4") at Init, lazily bound symbols,
// the C structs, the dcgmGetValuesSince_v2 callback into Go) against internal/fakedcgm, a fake
// libdcgm.so.4 written in C against the DCGM headers that ship in the go-dcgm module. go-dcgm keeps
// one global connection and dlopen handle per process, so each scenario runs in its own child
// process (this test binary again, with LD_LIBRARY_PATH pointing at the fake), which is also how
// the library is found: the same way a node finds the real one (go-dcgm pkg/dcgm/admin.go
// dlopens "libdcgm.so.4" by its soname, through the dynamic loader's search path).

const childEnv = "GPURECEIVER_FAKE_DCGM_SCENARIO"

// buildFakeLibDCGM compiles the fake libdcgm.so.4 (internal/fakedcgm/csrc) and returns its directory.
func buildFakeLibDCGM(t *testing.T) string { return fakedcgm.Build(t) }

// runChild runs one scenario in a child process and returns the fake library's call log.
func runChild(t *testing.T, scenario, libDir string, env ...string) []string {
	t.Helper()
	callLog := filepath.Join(t.TempDir(), "calls.log")
	cmd := exec.Command(os.Args[0], "-test.run=^TestFakeLibDCGMChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+scenario, "LD_LIBRARY_PATH="+libDir, "FAKE_DCGM_CALL_LOG="+callLog)
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	require.NoError(t, err, "child %s failed:\n%s", scenario, out.String())
	require.Contains(t, out.String(), "--- PASS: TestFakeLibDCGMChild", "child %s did not run:\n%s", scenario, out.String())
	if strings.Contains(out.String(), "--- SKIP") {
		t.Skipf("child %s skipped:\n%s", scenario, out.String())
	}
	b, _ := os.ReadFile(callLog)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func TestFakeLibDCGM(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("parent test")
	}
	libDir := buildFakeLibDCGM(t)

	t.Run("standalone", func(t *testing.T) {
		calls := runChild(t, "standalone", libDir)
		assert.Contains(t, calls, "dcgmConnect_v2 localhost:5555 0")
		assert.NotContains(t, calls, "dcgmStartEmbedded 0")
		assert.Contains(t, calls, "dcgmGetValuesSince_v2 0", "the first poll asks for everything DCGM kept")
		assert.Contains(t, calls, "dcgmGetValuesSince_v2 1700000010000001", "the second continues after the last sample")
		// Rates and XIDs at the 1 s sample interval with 30 s of history; the rest at the 10 s collection interval.
		assert.Contains(t, calls, "dcgmWatchFields 1 1 1000000 30 0")
		assert.Contains(t, calls, "dcgmWatchFields 2 2 10000000 30 2")
		for _, c := range []string{"dcgmUnwatchFields 1 1", "dcgmFieldGroupDestroy 1", "dcgmGroupDestroy 1", "dcgmUnwatchFields 2 2", "dcgmDisconnect", "dcgmShutdown"} {
			assert.Contains(t, calls, c, "shutdown cleans up")
		}
	})
	t.Run("embedded", func(t *testing.T) {
		calls := runChild(t, "embedded", libDir)
		assert.Contains(t, calls, "dcgmStartEmbedded 1", "DCGM_OPERATION_MODE_AUTO")
		assert.Contains(t, calls, "dcgmStopEmbedded")
	})
	t.Run("unix socket", func(t *testing.T) {
		calls := runChild(t, "unixsocket", libDir)
		assert.Contains(t, calls, "dcgmConnect_v2 /run/nvidia-dcgm/hostengine.sock 1")
	})
	t.Run("hostengine unreachable", func(t *testing.T) {
		calls := runChild(t, "connectfail", libDir, "FAKE_DCGM_CONNECT_FAIL=1")
		// After a failed Init nothing but Init is ever called again: go-dcgm would die on the
		// first other call with a real, absent library.
		for _, c := range calls {
			assert.True(t, strings.HasPrefix(c, "dcgmInit") || strings.HasPrefix(c, "dcgmConnect_v2"), "unexpected call %q after a failed connect", c)
		}
		assert.Len(t, calls, 4, "one try at start, one after retry_interval")
	})
	t.Run("no profiling module", func(t *testing.T) {
		calls := runChild(t, "noprof", libDir, "FAKE_DCGM_NO_PROF=1")
		assert.Contains(t, calls, "dcgmProfGetSupportedMetricGroups 0")
	})
	t.Run("reconnect after shutdown", func(t *testing.T) {
		// dcgm.Shutdown dlcloses libdcgm; symbols bound lazily before must still work after the
		// next Init dlopens it again (glibc keeps a library whose symbols the executable bound).
		calls := runChild(t, "reconnect", libDir)
		n := 0
		for _, c := range calls {
			if c == "dcgmConnect_v2 localhost:5555 0" {
				n++
			}
		}
		assert.Equal(t, 2, n)
	})
	// DCGM 4.6 on Hopper (G1): the fixed metric-group ranges list 1091/1092, which stay blank
	// on a driver without the GPM PCIe counter: the rates carry PCIe, and one line says so.
	t.Run("hopper dcgm 4.6 without gpm pcie counter", func(t *testing.T) {
		calls := runChild(t, "hopper", libDir, "FAKE_DCGM_HOPPER=1")
		assert.Contains(t, calls, "dcgmProfGetSupportedMetricGroups 0")
	})
	t.Run("hopper dcgm 4.6 with gpm pcie counter", func(t *testing.T) {
		runChild(t, "hoppercounter", libDir, "FAKE_DCGM_HOPPER=1", "FAKE_DCGM_GPM_PCIE=1")
	})
	t.Run("late sample", func(t *testing.T) {
		runChild(t, "late", libDir, "FAKE_DCGM_LATE=1")
	})
	t.Run("connection loss", func(t *testing.T) {
		calls := runChild(t, "drop", libDir, "FAKE_DCGM_DROP_AT=2")
		n := 0
		for _, c := range calls {
			if c == "dcgmConnect_v2 localhost:5555 0" {
				n++
			}
		}
		assert.Equal(t, 2, n, "reconnected after the loss")
	})
	t.Run("value cap", func(t *testing.T) {
		// 8 GPUs x 4 rate fields x 5000 samples = 160000 values, over go-dcgm's 131072.
		calls := runChild(t, "cap", libDir, "FAKE_DCGM_GPUS=8", "FAKE_DCGM_SAMPLES=5000")
		var since []string
		for _, c := range calls {
			if strings.HasPrefix(c, "dcgmGetValuesSince_v2 ") {
				since = append(since, strings.TrimPrefix(c, "dcgmGetValuesSince_v2 "))
			}
		}
		require.GreaterOrEqual(t, len(since), 3)
		assert.Equal(t, "0", since[0])
		assert.NotEqual(t, "0", since[1], "the cursor moved after go-dcgm refused the answer")
	})
	t.Run("mig", func(t *testing.T) {
		calls := runChild(t, "mig", libDir, "FAKE_DCGM_MIG=1")
		assert.Contains(t, calls, "dcgmGetGpuInstanceHierarchy")
		assert.Contains(t, calls, "dcgmGroupAddEntity 3 5 0", "the compute instance joins the MIG XID group")
	})
	t.Run("link health", func(t *testing.T) {
		runChild(t, "nvlink5", libDir, "FAKE_DCGM_NVLINK5=1")
	})
	// DCGM 4.6 on B200s: 1040-1075 blank, the links' bytes from 1532/1533 on DCGM_FE_LINK
	// entities, which go-dcgm packs and the fake (compiled against dcgm_link_t) unpacks.
	t.Run("blackwell per-link bytes on link entities", func(t *testing.T) {
		calls := runChild(t, "blackwell", libDir, "FAKE_DCGM_BLACKWELL=1", "FAKE_DCGM_LIVE=1")
		assert.Contains(t, calls, "dcgmGetNvLinkLinkStatus")
		// dcgm_link_t raw: type DCGM_FE_GPU (1) | index << 8 | gpuId << 24.
		assert.Contains(t, calls, "dcgmGroupAddEntity 3 6 769", "gpu0 link 3")
		assert.Contains(t, calls, "dcgmGroupAddEntity 3 6 16781569", "gpu1 link 17")
	})
	t.Run("no library", func(t *testing.T) {
		runChild(t, "nolib", t.TempDir())
	})
}

// TestFakeLibraryExportsEverySymbol: the fake must define every libdcgm symbol this binary (and so
// go-dcgm) references, or a call to a missing one would kill the test process; a go-dcgm upgrade
// that references a new function fails here first.
func TestFakeLibraryExportsEverySymbol(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("parent test")
	}
	libDir := buildFakeLibDCGM(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	need := dynamicSymbols(t, exe, false)
	have := dynamicSymbols(t, filepath.Join(libDir, "libdcgm.so.4"), true)
	n := 0
	for s := range need {
		if strings.HasPrefix(s, "dcgm") || strings.HasPrefix(s, "Dcgm") || s == "errorString" {
			n++
			assert.True(t, have[s], "the fake libdcgm.so.4 does not export %s", s)
		}
	}
	assert.Greater(t, n, 40, "go-dcgm references about 56 libdcgm symbols")
}

func dynamicSymbols(t *testing.T, path string, defined bool) map[string]bool {
	f, err := elf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	syms, err := f.DynamicSymbols()
	require.NoError(t, err)
	out := map[string]bool{}
	for _, s := range syms {
		if (s.Section != elf.SHN_UNDEF) == defined {
			out[s.Name] = true
		}
	}
	return out
}

// TestFakeLibDCGMChild is the child side: it runs the receiver with the real sources.
func TestFakeLibDCGMChild(t *testing.T) {
	scenario := os.Getenv(childEnv)
	if scenario == "" {
		t.Skip("run by TestFakeLibDCGM in a child process")
	}
	cfg := createDefaultConfig().(*Config)
	cfg.RootPath = sysfsFixture(t)
	switch scenario {
	case "embedded":
		cfg.DCGM.Mode = modeEmbedded
	case "unixsocket":
		cfg.DCGM.Endpoint = "unix:///run/nvidia-dcgm/hostengine.sock"
	case "nolib", "connectfail":
		cfg.RetryInterval = time.Minute
	case "blackwell":
		cfg.Metrics.GpuNvlinkLinkIo.Enabled = true
	case "nvlink5":
		cfg.Metrics.GpuNvlinkErrors.Enabled = true
		cfg.Metrics.GpuNvlinkBitErrorRate.Enabled = true
		cfg.Metrics.GpuC2cErrors.Enabled = true
	}
	require.NoError(t, cfg.Validate())
	core, logs := observer.New(zap.DebugLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	s := newPatientScraper(cfg, set)
	clock := &testClock{t: time.Now()}
	s.now = clock.now
	ctx := context.Background()
	require.NoError(t, s.start(ctx, nil))
	defer func() { require.NoError(t, s.shutdown(ctx)) }()

	switch scenario {
	case "nolib":
		m := scrapeOnce(t, s)
		assert.Zero(t, m.MetricCount())
		msgs := logs.FilterMessage("No GPU metrics: no GPU library could be used; trying again later").All()
		require.Len(t, msgs, 1)
		reason := msgs[0].ContextMap()["reason"].(string)
		if !strings.Contains(reason, "libdcgm.so.4 not found") {
			t.Skipf("this machine has a real libdcgm.so.4: %s", reason)
		}
		assert.Contains(t, reason, "libnvidia-ml.so.1 not found", "NVML is tried as the fallback")
		return
	case "connectfail":
		for i := 0; i < 3; i++ {
			clock.t = clock.t.Add(25 * time.Second)
			assert.Zero(t, scrapeOnce(t, s).MetricCount())
		}
		msgs := logs.FilterMessage("No GPU metrics: no GPU library could be used; trying again later").All()
		require.Len(t, msgs, 1, "said once")
		assert.Contains(t, msgs[0].ContextMap()["reason"], "error connecting to nv-hostengine")
		return
	}

	m := scrapeOnce(t, s)
	require.NotNil(t, s.src)
	assert.Equal(t, "dcgm", s.src.kind())
	pcieTx := func(m pmetric.Metrics, dev string) point {
		return one(t, m, "interconnect.io", "device", dev, "component", "gpu_pcie", "direction", "transmit")
	}
	sourceLine := func() map[string]any {
		l := logs.FilterMessage("GPU interconnect bytes: source per quantity").FilterField(zap.String("device", "gpu0")).All()
		require.Len(t, l, 1, "one line per GPU")
		return l[0].ContextMap()
	}
	switch scenario {
	case "hopper":
		assert.EqualValues(t, 9*1000, pcieTx(m, "gpu0").i, "PCIe bytes from the rates: the first GPM sample is blank")
		for i := 0; i < 3; i++ {
			clock.t = clock.t.Add(10 * time.Second)
			scrapeOnce(t, s)
		}
		assert.Contains(t, sourceLine()["gpu_pcie"], "rate DCGM fields 1009/1010")
		return
	case "hoppercounter":
		first := pcieTx(m, "gpu0")
		for i := 0; i < 3; i++ {
			clock.t = clock.t.Add(10 * time.Second)
			m = scrapeOnce(t, s)
		}
		p := pcieTx(m, "gpu0")
		assert.Equal(t, first.start, p.start, "the counter continues the rate's series")
		assert.GreaterOrEqual(t, p.i, first.i)
		assert.Contains(t, sourceLine()["gpu_pcie"], "counter DCGM fields 1091/1092")
		return
	case "late":
		assert.EqualValues(t, 9*1000, pcieTx(m, "gpu0").i, "the late sample at 9 s covers 4 s")
		return
	case "drop":
		clock.t = clock.t.Add(10 * time.Second)
		lost, err := s.scrape(ctx)
		assert.ErrorContains(t, err, "DCGM_ST_CONNECTION_NOT_VALID", "a lost library is a scrape error")
		assert.Zero(t, lost.MetricCount())
		assert.Equal(t, 1, logs.FilterMessage("Lost the GPU library; reconnecting at the next scrape").Len())
		clock.t = clock.t.Add(10 * time.Second)
		m = scrapeOnce(t, s)
		require.NotNil(t, s.src)
		assert.Len(t, points(m, "gpu.info"), 2)
		return
	case "nvlink5":
		// Through go-dcgm's cgo path: the probe at discovery, then one latest read a scrape
		// (fakedcgm.c, FAKE_DCGM_NVLINK5: the counters grow by 5 a read, 1401 by one).
		clock.t = clock.t.Add(10 * time.Second)
		m = scrapeOnce(t, s)
		assert.Len(t, find(m, "gpu.nvlink.errors", "device", "gpu0"), 11)
		reads := one(t, m, "gpu.c2c.errors", "device", "gpu0", "c2c.error", "replay").i
		assert.Positive(t, reads, "1401 grew with the reads since the first reading")
		assert.EqualValues(t, 5*reads, one(t, m, "gpu.nvlink.errors", "device", "gpu0", "nvlink.error", "effective").i,
			"1219 grew by 5 a read over the same reads")
		assert.EqualValues(t, 0, one(t, m, "gpu.c2c.errors", "device", "gpu0", "c2c.error", "crc").i, "1400 did not move")
		assert.InDelta(t, 2.5e-9, one(t, m, "gpu.nvlink.bit_error_rate", "device", "gpu0", "nvlink.ber", "symbol").f, 1e-21)
		assert.InDelta(t, 1e-15, one(t, m, "gpu.nvlink.bit_error_rate", "device", "gpu0", "nvlink.ber", "effective").f, 1e-27)
		for _, name := range []string{"gpu.nvlink.errors", "gpu.c2c.errors", "gpu.nvlink.bit_error_rate"} {
			assert.Empty(t, find(m, name, "device", "gpu1"), "%s: the H100 has none", name)
		}
		return
	case "blackwell":
		// fakedcgm.c, FAKE_DCGM_BLACKWELL with FAKE_DCGM_LIVE: every poll ten new 1 s samples; link
		// l at 62.5 MB/s +- (2l - 15) MB/s, links 16-17 idle, the 16 summing to 1011/1012's 1e9 B/s.
		for scrape := 1; scrape <= 4; scrape++ {
			for _, dev := range []string{"gpu0", "gpu1"} {
				for _, dir := range []string{"transmit", "receive"} {
					links := find(m, "gpu.nvlink.link.io", "device", dev, "direction", dir)
					require.Len(t, links, 18, "scrape %d %s %s", scrape, dev, dir)
					var sum int64
					for _, p := range links {
						sum += p.i
					}
					agg := one(t, m, "interconnect.io", "device", dev, "component", "gpu_nvlink", "direction", dir).i
					assert.Equal(t, agg, sum, "scrape %d %s %s: the links sum to the aggregate", scrape, dev, dir)
				}
			}
			k := int64(10*scrape - 1)
			assert.EqualValues(t, k*53_500_000, one(t, m, "gpu.nvlink.link.io", "device", "gpu0", "link", int64(3), "direction", "transmit").i)
			assert.EqualValues(t, k*71_500_000, one(t, m, "gpu.nvlink.link.io", "device", "gpu0", "link", int64(3), "direction", "receive").i)
			assert.Zero(t, one(t, m, "gpu.nvlink.link.io", "device", "gpu1", "link", int64(17), "direction", "transmit").i, "idle link")
			clock.t = clock.t.Add(10 * time.Second)
			m = scrapeOnce(t, s)
		}
		assert.Equal(t, "rate DCGM fields 1532/1533 on DCGM_FE_LINK entities (bytes/s assumed, integrated)", sourceLine()["gpu_nvlink_link"])
		assert.Equal(t, []perLinkFrom{perLinkEntity, perLinkEntity}, s.src.(*nvmlFallback).dcgmSource.plan.perLink, "1040-1075 stayed blank")
		return
	case "mig":
		assert.EqualValues(t, 1, one(t, m, "gpu.xid.errors", "device", "gpu0", "xid", int64(79)).i, "the GPU's own XID")
		assert.EqualValues(t, 1, one(t, m, "gpu.xid.errors", "device", "gpu0", "xid", int64(43)).i, "the compute instance's XID, for its GPU")
		return
	case "cap":
		msgs := logs.FilterMessage("GPU series not collected").FilterField(zap.String("key", "history")).All()
		require.Len(t, msgs, 1)
		assert.Contains(t, msgs[0].ContextMap()["error"], "field value limit exceeded")
		clock.t = clock.t.Add(10 * time.Second)
		scrapeOnce(t, s)
		assert.Len(t, logs.FilterMessage("GPU series not collected").FilterField(zap.String("key", "history")).All(), 1, "said once")
		return
	}
	if scenario == "reconnect" {
		require.NoError(t, s.shutdown(ctx))
		require.NoError(t, s.start(ctx, nil))
		m = scrapeOnce(t, s)
		require.NotNil(t, s.src)
		assert.InDelta(t, 0.42, one(t, m, "gpu.utilization", "device", "gpu0").f, 1e-9)
		// The fake serves the same samples again; they are older than what was integrated already.
		assert.Empty(t, points(m, "interconnect.io"), "no sample counted twice")
		return
	}
	info := one(t, m, "gpu.info", "device", "gpu1")
	assert.Equal(t, "0000:3b:00.0", info.attrs["pci.bus_id"])
	assert.EqualValues(t, 1, info.attrs["numa.node"])
	assert.Equal(t, "GPU-fake0001-0000-0000-0000-000000000000", info.attrs["gpu.uuid"])
	assert.Equal(t, "NVIDIA H100 80GB HBM3", info.attrs["gpu.model"])
	assert.InDelta(t, 0.42, one(t, m, "gpu.utilization", "device", "gpu0").f, 1e-9)
	assert.InDelta(t, 0.07, one(t, m, "gpu.memory.copy_utilization", "device", "gpu1").f, 1e-9)
	assert.EqualValues(t, 0, one(t, m, "gpu.pcie.replays", "device", "gpu0").i, "3 replays since boot: 0 at the first reading (metadata/start-time.md)")
	assert.EqualValues(t, 8, one(t, m, "gpu.pcie.link.width", "device", "gpu1").i, "a downgraded link is visible")
	assert.EqualValues(t, 16, one(t, m, "gpu.pcie.link.max_width", "device", "gpu1").i)
	assert.EqualValues(t, 4, one(t, m, "gpu.pcie.link.generation", "device", "gpu1").i)
	assert.EqualValues(t, 5, one(t, m, "gpu.pcie.link.max_generation", "device", "gpu1").i)

	if scenario == "noprof" {
		assert.Empty(t, points(m, "interconnect.io"))
		assert.Empty(t, points(m, "gpu.dram.active"))
		assert.Empty(t, points(m, "gpu.sm.active"))
		assert.Empty(t, points(m, "gpu.graphics_engine.active"))
		msgs := logs.FilterMessage("GPU series not collected").FilterField(zap.String("key", "gpu0/profiling")).All()
		require.Len(t, msgs, 1)
		assert.Contains(t, msgs[0].ContextMap()["error"], "DCGM_ST_MODULE_NOT_LOADED")
		return
	}

	// Rates integrated over the fake's ten 1 s samples: the first opens each series.
	io := func(dev, comp, dir string) int64 {
		return one(t, m, "interconnect.io", "device", dev, "component", comp, "direction", dir).i
	}
	assert.EqualValues(t, 9*1000, io("gpu0", "gpu_pcie", "transmit"))
	assert.EqualValues(t, 9*2000, io("gpu1", "gpu_pcie", "transmit"))
	assert.EqualValues(t, 9*2000, io("gpu0", "gpu_pcie", "receive"), "the blank first sample only opens the series")
	assert.EqualValues(t, 9*1_000_000_000, io("gpu1", "gpu_nvlink", "transmit"), "NVLink4: the rate, since the NVLink5 counter is not supported")
	assert.Empty(t, find(m, "interconnect.io", "component", "gpu_c2c"), "C2C is not among the fake GPU's profiling metrics")
	assert.EqualValues(t, 1, one(t, m, "gpu.xid.errors", "device", "gpu0", "xid", int64(79)).i)
	assert.InDelta(t, 0.125, one(t, m, "gpu.dram.active", "device", "gpu0").f, 1e-9)
	assert.InDelta(t, 0.25, one(t, m, "gpu.graphics_engine.active", "device", "gpu1").f, 1e-9)
	assert.InDelta(t, 0.5, one(t, m, "gpu.sm.active", "device", "gpu0").f, 1e-9)
	assert.Empty(t, find(m, "gpu.sm.active", "device", "gpu1"), "per-value DCGM_ST_NOT_SUPPORTED costs that series only")
	assert.Equal(t, 1, logs.FilterField(zap.String("key", "gpu1/sm_active")).Len())

	// The next scrape: no new samples, the cursor moved on, the XID is not counted twice.
	clock.t = clock.t.Add(10 * time.Second)
	m = scrapeOnce(t, s)
	assert.EqualValues(t, 1, one(t, m, "gpu.xid.errors", "device", "gpu0", "xid", int64(79)).i)
	assert.Len(t, points(m, "gpu.info"), 2)
}

// BenchmarkScrapeLibDCGM measures one scrape of an 8-GPU node through go-dcgm's real cgo path and
// the fake libdcgm.so.4 (ten 1 s samples of the four rate fields per GPU per scrape, plus the latest
// values). It needs the fake on the library path, so it runs only when asked:
//
//	gcc -shared -fPIC -I$(go list -m -f '{{.Dir}}' github.com/NVIDIA/go-dcgm)/pkg/dcgm \
//	    -Wl,-soname,libdcgm.so.4 -o /tmp/fakedcgm/libdcgm.so.4 ../../internal/fakedcgm/csrc/*.c
//	GPURECEIVER_BENCH_LIBDCGM=1 FAKE_DCGM_GPUS=8 FAKE_DCGM_LIVE=1 LD_LIBRARY_PATH=/tmp/fakedcgm \
//	    go test -run '^$' -bench ScrapeLibDCGM -benchmem .
func BenchmarkScrapeLibDCGM(b *testing.B) {
	if os.Getenv("GPURECEIVER_BENCH_LIBDCGM") == "" {
		b.Skip("set GPURECEIVER_BENCH_LIBDCGM=1 and put the fake libdcgm.so.4 on LD_LIBRARY_PATH")
	}
	cfg := createDefaultConfig().(*Config)
	s := newPatientScraper(cfg, receivertest.NewNopSettings(metadata.Type))
	ctx := context.Background()
	require.NoError(b, s.start(ctx, nil))
	require.NotNil(b, s.src, "the fake libdcgm.so.4 was not found")
	defer func() { _ = s.shutdown(ctx) }()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m, err := s.scrape(ctx)
		if err != nil || len(find(m, "interconnect.io", "component", "gpu_pcie")) != 16 {
			b.Fatalf("scrape: %v, %d points", err, m.DataPointCount())
		}
	}
}

//go:build linux && cgo

package gpureceiver

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-iclens/otelcol-iclens/internal/fakenvml"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver/internal/metadata"
)

// These tests run go-nvml's real cgo path (dlopen("libnvidia-ml.so.1") at Init, the probe of the
// versioned symbols, lazily bound symbols, nvmlGpmMetricsGet_t and nvmlFieldValue_t as C structs)
// against internal/fakenvml, a fake libnvidia-ml.so.1 written in C against the nvml.h that ships
// in the go-nvml module (v0.13.4-1, NVML_API_VERSION 13). The library is found the way a node
// finds the real one, by its soname on LD_LIBRARY_PATH, which the dynamic loader reads at process
// start: each scenario runs in a child process (this test binary again).
//
// The fake's clock is a file the child writes (FAKE_NVML_CLOCK_FILE), set to the scraper's test
// clock before each scrape, so that the GPM samples and the receiver's points carry the same
// timestamps: the expected bytes are the fake's documented rates times the time between the GPM
// sample timestamps the fake logged, and nothing depends on how fast the machine is.

const nvmlChildEnv = "GPURECEIVER_FAKE_NVML_SCENARIO"

// The fake's rates (internal/fakenvml/csrc/fakenvml.c "Traffic"), in bytes/s.
const (
	fakeMiB         = 1 << 20
	fakePCIeRx      = 3 * fakeMiB
	fakeNVLink      = 100 * fakeMiB
	fakeC2CTx       = 40 * fakeMiB
	fakeC2CRx       = 20 * fakeMiB
	fakeClockEpoch  = int64(1_700_000_000_000_000) // µs, the fake's epoch with a clock file
	fakeClockOffset = 100 * sec                    // where the child's clock starts after it
)

func fakePCIeTx(gpu int) float64 { return float64(gpu+1) * 5 * fakeMiB }

// runNVMLChild runs one scenario in a child process with the fake in libDir and returns the
// child's output.
func runNVMLChild(t *testing.T, scenario, libDir string, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFakeLibNVMLChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), nvmlChildEnv+"="+scenario, "LD_LIBRARY_PATH="+libDir,
		"FAKE_NVML_CALL_LOG="+filepath.Join(t.TempDir(), "calls.log"),
		"FAKE_NVML_CLOCK_FILE="+filepath.Join(t.TempDir(), "clock"))
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	require.NoError(t, err, "child %s failed (a missing NVML symbol kills it with \"symbol lookup error\"):\n%s", scenario, out.String())
	require.Contains(t, out.String(), "--- PASS: TestFakeLibNVMLChild", "child %s did not run:\n%s", scenario, out.String())
	return out.String()
}

func TestFakeLibNVML(t *testing.T) {
	if os.Getenv(nvmlChildEnv) != "" {
		t.Skip("parent test")
	}
	lib := fakenvml.Build(t)
	for _, sc := range []struct {
		name string
		env  []string
	}{
		{"h100", []string{"FAKE_NVML_MODEL=h100"}},
		{"h100-rediscovery", []string{"FAKE_NVML_MODEL=h100"}},
		{"h100-gpm-without-pcie", []string{"FAKE_NVML_MODEL=h100", "FAKE_NVML_GPM_PCIE=0"}},
		{"gh200", []string{"FAKE_NVML_MODEL=gh200"}},
		{"gh200-gpm-without-c2c", []string{"FAKE_NVML_MODEL=gh200", "FAKE_NVML_GPM_C2C=0"}},
		{"a100", []string{"FAKE_NVML_MODEL=a100"}},
	} {
		t.Run(sc.name, func(t *testing.T) { runNVMLChild(t, sc.name, lib, sc.env...) })
	}
	// A driver whose libnvidia-ml.so.1 predates GPM has no nvmlGpm* symbol: go-nvml would call
	// one unresolved, which kills the process, so the receiver looks them up first.
	t.Run("driver-without-gpm", func(t *testing.T) {
		runNVMLChild(t, "driver-without-gpm", fakenvml.BuildWithoutGPM(t), "FAKE_NVML_MODEL=h100")
	})
}

// TestFakeLibNVMLExportsWhatGoNVMLCalls: every function the fake exports is one this binary (so
// go-nvml) references by that exact name: a misspelt or wrongly versioned export (nvmlInit, not
// nvmlInit_v2) would never be called, and the test would pass on a path no real library takes. The
// build without GPM lacks exactly the nvmlGpm* functions the receiver looks up.
func TestFakeLibNVMLExportsWhatGoNVMLCalls(t *testing.T) {
	if os.Getenv(nvmlChildEnv) != "" {
		t.Skip("parent test")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	need := dynamicSymbols(t, exe, false)
	exports := func(dir string) map[string]bool {
		out := map[string]bool{}
		for s := range dynamicSymbols(t, filepath.Join(dir, "libnvidia-ml.so.1"), true) {
			if strings.HasPrefix(s, "nvml") {
				out[s] = true
			}
		}
		return out
	}
	full := exports(fakenvml.Build(t))
	for s := range full {
		assert.True(t, need[s], "the fake exports %s, which go-nvml never calls", s)
	}
	for _, s := range append([]string{"nvmlInit_v2", "nvmlDeviceGetCount_v2", "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetPciInfo_v3"}, nvmlGPMSymbols...) {
		assert.True(t, full[s], "the fake lacks %s", s)
	}
	noGPM := exports(fakenvml.BuildWithoutGPM(t))
	for _, s := range nvmlGPMSymbols {
		assert.False(t, noGPM[s], "the build without GPM exports %s", s)
		delete(full, s)
	}
	assert.Equal(t, full, noGPM, "the build without GPM differs only in the nvmlGpm* functions")
}

// fakeNVMLLog is the fake's call log, parsed.
type fakeNVMLLog struct {
	// gpmTS[gpu] are the timestamps (µs) of the GPU's GPM samples, in call order.
	gpmTS map[int][]int64
	// pcie[gpu][field] are the values of the PCIe counters 197/198 read, in call order.
	pcie map[int]map[uint32][]uint64
	// metricRets[metric id] counts the GPM metric answers per return code.
	metricRets map[uint32]map[int]int
	lines      []string
}

func readFakeNVMLLog(t *testing.T) fakeNVMLLog {
	t.Helper()
	b, err := os.ReadFile(os.Getenv("FAKE_NVML_CALL_LOG"))
	require.NoError(t, err)
	l := fakeNVMLLog{gpmTS: map[int][]int64{}, pcie: map[int]map[uint32][]uint64{}, metricRets: map[uint32]map[int]int{}}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		l.lines = append(l.lines, line)
		f := strings.Fields(line)
		num := func(i int) int64 {
			v, err := strconv.ParseInt(f[i], 10, 64)
			require.NoError(t, err, line)
			return v
		}
		switch f[0] {
		case "nvmlGpmSampleGet":
			g := int(num(1))
			l.gpmTS[g] = append(l.gpmTS[g], num(2))
		case "nvmlDeviceGetFieldValues":
			g, id := int(num(1)), uint32(num(2))
			v, err := strconv.ParseUint(f[4], 10, 64)
			require.NoError(t, err, line)
			if l.pcie[g] == nil {
				l.pcie[g] = map[uint32][]uint64{}
			}
			l.pcie[g][id] = append(l.pcie[g][id], v)
		case "nvmlGpmMetricsGet":
			id := uint32(num(2))
			if l.metricRets[id] == nil {
				l.metricRets[id] = map[int]int{}
			}
			l.metricRets[id][int(num(3))]++
		}
	}
	return l
}

// gpmSeconds is the time the receiver's GPM bytes of gpu cover, by the fake's sample timestamps:
// from the sample of the first poll (whose period only opens the series; the one before it is
// taken at setup) to the last one.
func (l fakeNVMLLog) gpmSeconds(t *testing.T, gpu int) float64 {
	ts := l.gpmTS[gpu]
	require.GreaterOrEqual(t, len(ts), 3, "GPU %d: a setup sample and at least two polls", gpu)
	return float64(ts[len(ts)-1]-ts[1]) / 1e6
}

// counterDelta is what the receiver must serve from a cumulative counter: its last value read
// minus its first (the first reading opens the series).
func (l fakeNVMLLog) counterDelta(t *testing.T, gpu int, id uint32) float64 {
	v := l.pcie[gpu][id]
	require.GreaterOrEqual(t, len(v), 2, "GPU %d field %d read at least twice", gpu, id)
	return float64(v[len(v)-1] - v[0])
}

// TestFakeLibNVMLChild is the child side: the receiver with source nvml and the real go-nvml.
func TestFakeLibNVMLChild(t *testing.T) {
	scenario := os.Getenv(nvmlChildEnv)
	if scenario == "" {
		t.Skip("run by TestFakeLibNVML in a child process")
	}
	clockFile := os.Getenv("FAKE_NVML_CLOCK_FILE")
	clock := &testClock{}
	setClock := func(us int64) {
		clock.t = time.UnixMicro(us)
		require.NoError(t, os.WriteFile(clockFile, []byte(strconv.FormatInt(us, 10)), 0o644))
	}
	now := fakeClockEpoch + fakeClockOffset
	setClock(now)

	cfg := createDefaultConfig().(*Config)
	cfg.Source = sourceNVML
	cfg.RootPath = sysfsFixture(t)
	require.NoError(t, cfg.Validate())
	core, logs := observer.New(zap.DebugLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	s := newPatientScraper(cfg, set)
	s.now = clock.now
	ctx := context.Background()
	require.NoError(t, s.start(ctx, nil))
	defer func() { require.NoError(t, s.shutdown(ctx)) }()
	require.NotNil(t, s.src, "the fake libnvidia-ml.so.1 was not loaded: %v", logs.All())
	require.Equal(t, "nvml", s.src.kind())

	// Scrapes at uneven steps (10, 7, 13, 4 s): the bytes follow the samples' timestamps,
	// whatever the step; the total stays under the one-minute rediscovery unless asked.
	steps := []int64{10, 7, 13, 4}
	if scenario == "h100-rediscovery" {
		steps = []int64{10, 25, 30, 10, 9} // a rediscovery (retry_interval 1 min) at the 66th second
	}
	var m pmetric.Metrics
	for _, step := range steps {
		now += step * sec
		setClock(now)
		m = scrapeOnce(t, s) // no error: whatever the fake does not serve costs its series only
	}
	calls := readFakeNVMLLog(t)
	io := func(gpu int, comp, dir string) float64 {
		return float64(one(t, m, "interconnect.io", "device", fmt.Sprintf("gpu%d", gpu), "component", comp, "direction", dir).i)
	}
	hasIO := func(gpu int, comp string) bool {
		return len(find(m, "interconnect.io", "device", fmt.Sprintf("gpu%d", gpu), "component", comp)) > 0
	}
	sourceLine := func(gpu int) map[string]any {
		l := logs.FilterMessage("GPU interconnect bytes: source per quantity").FilterField(zap.String("device", fmt.Sprintf("gpu%d", gpu))).All()
		require.Len(t, l, 1, "one line per GPU")
		return l[0].ContextMap()
	}
	notProvided := func(key string) []observer.LoggedEntry {
		return logs.FilterMessage(msgNotProvided).FilterField(zap.String("key", key)).All()
	}
	// Bytes from GPM rates: the fake's rate times the span of its own sample timestamps. The
	// tolerance is the fake's whole-byte rounding at each end (bytesAt truncates).
	gpmBytes := func(gpu int, comp, dir string, rate float64) {
		t.Helper()
		assert.InDelta(t, rate*calls.gpmSeconds(t, gpu), io(gpu, comp, dir), 4, "GPU %d %s %s", gpu, comp, dir)
	}
	// Bytes from the counters 197/198: exactly the counter's growth between the readings.
	counterBytes := func(gpu int) {
		t.Helper()
		assert.Equal(t, calls.counterDelta(t, gpu, 197), io(gpu, "gpu_pcie", "transmit"), "GPU %d PCIe TX from field 197", gpu)
		assert.Equal(t, calls.counterDelta(t, gpu, 198), io(gpu, "gpu_pcie", "receive"), "GPU %d PCIe RX from field 198", gpu)
		// And that growth is the rate times the time between the first and the last reading.
		elapsed := float64(now-(fakeClockEpoch+fakeClockOffset+steps[0]*sec)) / 1e6
		assert.InDelta(t, fakePCIeTx(gpu)*elapsed, io(gpu, "gpu_pcie", "transmit"), 2)
	}

	// Every mode: identity, NVLink from the cumulative KiB counters 138/139, the latest values.
	info := one(t, m, "gpu.info", "device", "gpu1")
	assert.Equal(t, "0000:3b:00.0", info.attrs["pci.bus_id"], "nvmlPciInfo_t.busId, normalised")
	assert.EqualValues(t, 1, info.attrs["numa.node"])
	assert.Equal(t, "GPU-fa4e0001-0000-0000-0000-000000000000", info.attrs["gpu.uuid"])
	nvlinkSeconds := float64(now-(fakeClockEpoch+fakeClockOffset+steps[0]*sec)) / 1e6
	assert.InDelta(t, fakeNVLink*nvlinkSeconds, io(0, "gpu_nvlink", "transmit"), 2048, "KiB x 1024: a KiB of rounding at each end")
	assert.EqualValues(t, 8, one(t, m, "gpu.pcie.link.width", "device", "gpu1").i)
	assert.InDelta(t, 0.42, one(t, m, "gpu.utilization", "device", "gpu0").f, 1e-9)

	switch scenario {
	case "h100", "h100-rediscovery":
		assert.Equal(t, "NVIDIA H100 80GB HBM3", info.attrs["gpu.model"])
		for g := 0; g < 2; g++ {
			gpmBytes(g, "gpu_pcie", "transmit", fakePCIeTx(g))
			gpmBytes(g, "gpu_pcie", "receive", fakePCIeRx)
			assert.False(t, hasIO(g, "gpu_c2c"), "NVML_FI_DEV_C2C_LINK_COUNT is 0: no C2C series")
			assert.Contains(t, sourceLine(g)["gpu_pcie"], "rate NVML GPM metrics 20/21")
		}
		assert.Empty(t, calls.pcie, "with GPM PCIe rates the counters 197/198 are never asked for")
		assert.NotContains(t, calls.metricRets, uint32(100), "C2C metrics are not asked of a GPU without C2C")
		assert.InDelta(t, 0.8, one(t, m, "gpu.sm.active", "device", "gpu0").f, 1e-9)
		assert.InDelta(t, 0.375, one(t, m, "gpu.dram.active", "device", "gpu1").f, 1e-9)
		assert.InDelta(t, 0.9, one(t, m, "gpu.graphics_engine.active", "device", "gpu0").f, 1e-9)
		if scenario == "h100-rediscovery" {
			for _, r := range calls.metricRets {
				assert.Zero(t, r[int(nvmlErrInvalidArgument)], "no GPM period of zero length after a rediscovery:\n%s", strings.Join(calls.lines, "\n"))
			}
		}
	case "h100-gpm-without-pcie":
		// The first poll's GPM answers NOT_SUPPORTED for 20/21: the counters take over at once.
		for g := 0; g < 2; g++ {
			counterBytes(g)
		}
		assert.Equal(t, 2, calls.metricRets[20][int(nvmlErrNotSupported)], "20 asked once per GPU, then no more")
		assert.InDelta(t, 0.8, one(t, m, "gpu.sm.active", "device", "gpu0").f, 1e-9, "the other GPM metrics stay")
		assert.Empty(t, logs.FilterLevelExact(zap.WarnLevel).All())
	case "gh200", "gh200-gpm-without-c2c":
		assert.Equal(t, "NVIDIA GH200 480GB", info.attrs["gpu.model"])
		for g := 0; g < 2; g++ {
			gpmBytes(g, "gpu_pcie", "transmit", fakePCIeTx(g))
		}
		if scenario == "gh200" {
			for g := 0; g < 2; g++ {
				gpmBytes(g, "gpu_c2c", "transmit", fakeC2CTx)
				gpmBytes(g, "gpu_c2c", "receive", fakeC2CRx)
				assert.Contains(t, sourceLine(g)["gpu_c2c"], "rate NVML GPM metrics 100/101")
			}
			return
		}
		// NOT_SUPPORTED for 100/101 costs the C2C series, said once each, not the scrape.
		for g := 0; g < 2; g++ {
			assert.False(t, hasIO(g, "gpu_c2c"))
			for _, q := range []quantity{qC2CTxRate, qC2CRxRate} {
				l := notProvided(fmt.Sprintf("gpu%d/%s", g, q))
				require.Len(t, l, 1)
				assert.Contains(t, l[0].ContextMap()["reason"], "Not Supported", "the library's own nvmlErrorString")
			}
		}
	case "a100":
		assert.Equal(t, "NVIDIA A100-SXM4-80GB", info.attrs["gpu.model"])
		for g := 0; g < 2; g++ {
			counterBytes(g)
			assert.Contains(t, sourceLine(g)["gpu_pcie"], "counter NVML fields 197/198")
			require.Len(t, notProvided(fmt.Sprintf("gpu%d/gpm", g)), 1, "no GPM: said once")
		}
		assert.Empty(t, calls.gpmTS, "no GPM sample is taken on a GPU without GPM")
		assert.Empty(t, find(m, "gpu.sm.active"))
	case "driver-without-gpm":
		for g := 0; g < 2; g++ {
			counterBytes(g)
			l := notProvided(fmt.Sprintf("gpu%d/gpm", g))
			require.Len(t, l, 1)
			assert.Contains(t, l[0].ContextMap()["reason"], "no nvmlGpmQueryDeviceSupport")
		}
		assert.Empty(t, find(m, "gpu.sm.active"))
	default:
		t.Fatalf("unknown scenario %q", scenario)
	}
}

// NVML return codes as the fake logs them (nvml.h nvmlReturn_t).
const (
	nvmlErrInvalidArgument = 2
	nvmlErrNotSupported    = 3
)

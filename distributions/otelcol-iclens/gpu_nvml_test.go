package otelcoliclens_test

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/fakenvml"
)

// The built collector against internal/fakenvml, a fake libnvidia-ml.so.1 written in C against the
// nvml.h that ships in go-nvml v0.13.4-1 (NVML_API_VERSION 13), found the way a node finds the real
// one: by its soname on LD_LIBRARY_PATH, through go-nvml's dlopen at nvmlInit. No libdcgm.so.4 is
// there, so the default source (auto) falls back from DCGM to NVML. The fake follows the wall
// clock and moves bytes at constant rates (fakenvml.c "Traffic"); every number it served is in its
// call log, and the checks count in those samples, not in the test's own time.

// The fake's rates in bytes/s (internal/fakenvml/csrc/fakenvml.c).
const (
	nvmlMiB      = 1 << 20
	nvmlPCIeTx0  = 5 * nvmlMiB // GPU 0; GPU g moves (g+1) x 5 MiB/s
	nvmlPCIeRx   = 3 * nvmlMiB
	nvmlC2CTx    = 40 * nvmlMiB
	nvmlC2CRx    = 20 * nvmlMiB
	nvmlFieldTx  = 197 // NVML_FI_DEV_PCIE_COUNT_TX_BYTES
	nvmlFieldRx  = 198 // NVML_FI_DEV_PCIE_COUNT_RX_BYTES
	nvmlGPMSkewS = 0.5 // how far a GPM sample's timestamp may lie from the scrape's (s): a loaded machine can delay the poll after the scrape read its clock
)

// fakeNVMLCalls is the fake's call log of GPU 0 as far as it is written: the timestamps of its GPM
// samples, and the values of the PCIe counters read.
type fakeNVMLCalls struct {
	gpmTS   []int64
	counter map[int][]uint64
}

func readNVMLCalls(t *testing.T, path string) fakeNVMLCalls {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	c := fakeNVMLCalls{counter: map[int][]uint64{}}
	text := string(b)
	// Only whole lines: the fake may be writing the last one.
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "nvmlGpmSampleGet" && f[1] == "0":
			ts, err := strconv.ParseInt(f[2], 10, 64)
			require.NoError(t, err, line)
			c.gpmTS = append(c.gpmTS, ts)
		case len(f) == 5 && f[0] == "nvmlDeviceGetFieldValues" && f[1] == "0":
			id, _ := strconv.Atoi(f[2])
			v, err := strconv.ParseUint(f[4], 10, 64)
			require.NoError(t, err, line)
			c.counter[id] = append(c.counter[id], v)
		}
	}
	return c
}

// counterGrowth lists what a total served from PCIe counter field may be: each value the fake
// handed out minus the first (the first reading opens the series).
func (c fakeNVMLCalls) counterGrowth(t *testing.T, field int) []float64 {
	t.Helper()
	read := c.counter[field]
	require.NotEmpty(t, read, "field %d was read", field)
	out := make([]float64, 0, len(read))
	for _, r := range read {
		out = append(out, float64(r-read[0]))
	}
	return out
}

// nvmlCollector starts the built collector with the gpu receiver (plus the receiver keys in gpu)
// against a fake libnvidia-ml.so.1 in libDir, and returns its address, log and the fake's call log.
func nvmlCollector(t *testing.T, libDir, gpu string, env ...string) (string, func() string, string) {
	t.Helper()
	bin := collectorBinary(t)
	addr := freeAddr(t)
	callLog := filepath.Join(t.TempDir(), "nvml-calls.log")
	logs := startCollectorWith(t, bin, gpuConfig(t, addr, gpu),
		append([]string{"LD_LIBRARY_PATH=" + libDir, "FAKE_NVML_CALL_LOG=" + callLog}, env...))
	return addr, logs.String, callLog
}

// ioLabels are the labels of GPU 0's interconnect.io series for component and direction.
func ioLabels(component, direction string) []string {
	return []string{`component="` + component + `"`, `device="gpu0"`, `direction="` + direction + `"`, `pci_bus_id="0000:1b:00.0"`}
}

// assertGPMBytes checks a total integrated from GPM rates: the receiver charges each rate to the
// time between its scrapes, the fake measured it between its samples, so the total is the rate
// times the span from the sample of the first poll (the one at setup only starts the first period;
// the first rate only opens the series) to one of the later samples, within the skew between a
// scrape's timestamp and its GPM sample's.
func assertGPMBytes(t *testing.T, calls fakeNVMLCalls, served, rate float64, what string) {
	t.Helper()
	require.GreaterOrEqual(t, len(calls.gpmTS), 3, "%s: a setup sample and at least two polls", what)
	best := math.Inf(1)
	for _, ts := range calls.gpmTS[1:] {
		best = math.Min(best, math.Abs(served-rate*float64(ts-calls.gpmTS[1])/1e6))
	}
	assert.LessOrEqual(t, best, rate*nvmlGPMSkewS,
		"%s: %.0f B is not the rate %.0f B/s times the span of the fake's GPM samples %v", what, served, rate, calls.gpmTS)
}

// TestCollectorGPUNVMLHopperGPM (N12): the built collector on an H100 node with NVML but no DCGM.
// PCIe bytes come from NVML's GPM rates (NVML_GPM_METRIC_PCIE_TX/RX_PER_SEC, MiB/s) integrated,
// served as interconnect.io gpu_pcie with the GPU's PCI address, and no C2C series (the H100's
// NVML_FI_DEV_C2C_LINK_COUNT is 0).
func TestCollectorGPUNVMLHopperGPM(t *testing.T) {
	addr, logs, callLog := nvmlCollector(t, fakenvml.Build(t), "", "FAKE_NVML_MODEL=h100")

	const metric = "interconnect_io_bytes_total"
	waitForSample(t, addr, metric, func(v float64) bool { return v > 0 }, ioLabels("gpu_pcie", "transmit")...)
	// The log is read after the page: every GPM sample behind the values served is in it.
	body := metricsBody(t, addr)
	calls := readNVMLCalls(t, callLog)
	tx, ok := sampleValue(body, metric, ioLabels("gpu_pcie", "transmit")...)
	require.True(t, ok, "GPU PCIe transmit bytes served:\n%s", body)
	rx, ok := sampleValue(body, metric, ioLabels("gpu_pcie", "receive")...)
	require.True(t, ok, "GPU PCIe receive bytes served:\n%s", body)
	assertGPMBytes(t, calls, tx, nvmlPCIeTx0, "gpu_pcie transmit")
	assertGPMBytes(t, calls, rx, nvmlPCIeRx, "gpu_pcie receive")
	assert.Empty(t, calls.counter[nvmlFieldTx], "the GPM rates carry PCIe: fields 197/198 are not read")
	assert.Empty(t, sampleValues(body, metric, `component="gpu_c2c"`), "an H100 without C2C has no gpu_c2c series")
	assert.Len(t, sampleValues(body, "gpu_info", `device="gpu0"`, `gpu_model="NVIDIA H100 80GB HBM3"`,
		`gpu_uuid="GPU-fa4e0000-0000-0000-0000-000000000000"`, `pci_bus_id="0000:1b:00.0"`, `source="nvml"`), 1, "gpu.info from NVML:\n%s", body)

	out := logs()
	assert.Contains(t, out, "DCGM is not available, reading GPUs through NVML instead")
	assert.Contains(t, out, `"gpu_pcie": "rate NVML GPM metrics 20/21 PCIE_TX/RX_PER_SEC (MiB/s, integrated); fields 197/198 if GPM lacks them"`)
	assert.NotContains(t, out, "\terror\t")
}

// TestCollectorGPUNVMLGraceHopperC2C (N12): a GH200 through NVML: its chip-to-chip link's bytes
// come from the GPM rates NVML_GPM_METRIC_C2C_TOTAL_TX/RX_PER_SEC (100/101), asked because its
// NVML_FI_DEV_C2C_LINK_COUNT is not 0, and are served as interconnect.io gpu_c2c.
func TestCollectorGPUNVMLGraceHopperC2C(t *testing.T) {
	addr, logs, callLog := nvmlCollector(t, fakenvml.Build(t), `
    source: nvml`, "FAKE_NVML_MODEL=gh200")

	const metric = "interconnect_io_bytes_total"
	waitForSample(t, addr, metric, func(v float64) bool { return v > 0 }, ioLabels("gpu_c2c", "transmit")...)
	body := metricsBody(t, addr)
	calls := readNVMLCalls(t, callLog)
	for _, s := range []struct {
		component, direction string
		rate                 float64
	}{
		{"gpu_c2c", "transmit", nvmlC2CTx},
		{"gpu_c2c", "receive", nvmlC2CRx},
		{"gpu_pcie", "transmit", nvmlPCIeTx0},
	} {
		v, ok := sampleValue(body, metric, ioLabels(s.component, s.direction)...)
		require.True(t, ok, "%s %s served:\n%s", s.component, s.direction, body)
		assertGPMBytes(t, calls, v, s.rate, s.component+" "+s.direction)
	}
	out := logs()
	assert.Contains(t, out, `"gpu_c2c": "rate NVML GPM metrics 100/101 C2C_TOTAL_TX/RX_PER_SEC (MiB/s, integrated)"`)
	assert.NotContains(t, out, "\terror\t")
}

// TestCollectorGPUNVMLWithoutGPM (N12): PCIe bytes from the cumulative counters 197/198
// (NVML_FI_DEV_PCIE_COUNT_TX/RX_BYTES) where there is no GPM: on an A100 (nvmlGpmQueryDeviceSupport
// says unsupported) and on a driver whose libnvidia-ml.so.1 has no nvmlGpm* function at all, which
// the collector must survive (go-nvml binds lazily: a call to a missing symbol kills the process).
// A counter total is exact: the served bytes are a counter value the fake handed out minus the
// first one.
func TestCollectorGPUNVMLWithoutGPM(t *testing.T) {
	for _, tc := range []struct {
		name, model string
		build       func(testing.TB) string
		said        string
	}{
		{"a100", "a100", fakenvml.Build, "the GPU has no GPM"},
		{"driver without GPM", "h100", fakenvml.BuildWithoutGPM, "has no GPM (no nvmlGpmQueryDeviceSupport)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, logs, callLog := nvmlCollector(t, tc.build(t), `
    source: nvml`, "FAKE_NVML_MODEL="+tc.model)

			const metric = "interconnect_io_bytes_total"
			waitForSample(t, addr, metric, func(v float64) bool { return v > 0 }, ioLabels("gpu_pcie", "transmit")...)
			body := metricsBody(t, addr)
			calls := readNVMLCalls(t, callLog)
			for _, s := range []struct {
				direction string
				field     int
			}{{"transmit", nvmlFieldTx}, {"receive", nvmlFieldRx}} {
				v, ok := sampleValue(body, metric, ioLabels("gpu_pcie", s.direction)...)
				require.True(t, ok, "gpu_pcie %s served:\n%s", s.direction, body)
				assert.Contains(t, calls.counterGrowth(t, s.field), v, "gpu_pcie %s: %.0f B is no counter growth the fake served", s.direction, v)
			}
			assert.Empty(t, calls.gpmTS, "no GPM sample without GPM")
			out := logs()
			assert.Contains(t, out, `"gpu_pcie": "counter NVML fields 197/198 FI_DEV_PCIE_COUNT_TX/RX_BYTES (cumulative bytes)"`)
			assert.Contains(t, out, tc.said)
			assert.NotContains(t, out, "\terror\t")
			assert.NotContains(t, out, "symbol lookup error")
		})
	}
}

// TestCollectorGPUNVMLGPMNotSupported (N12): a GH200 whose GPM answers NVML_ERROR_NOT_SUPPORTED for
// the PCIe and the C2C metrics (FAKE_NVML_GPM_PCIE=0, FAKE_NVML_GPM_C2C=0), as a driver whose GPM
// lacks them: each costs its own series only. PCIe bytes come from the counters 197/198 instead,
// exactly the counter's growth; there is no gpu_c2c series, one line says why, and the scrape goes
// on (the activity ratios from the same GPM call are served).
func TestCollectorGPUNVMLGPMNotSupported(t *testing.T) {
	addr, logs, callLog := nvmlCollector(t, fakenvml.Build(t), `
    source: nvml`, "FAKE_NVML_MODEL=gh200", "FAKE_NVML_GPM_PCIE=0", "FAKE_NVML_GPM_C2C=0")

	const metric = "interconnect_io_bytes_total"
	waitForSample(t, addr, metric, func(v float64) bool { return v > 0 }, ioLabels("gpu_pcie", "transmit")...)
	body := metricsBody(t, addr)
	calls := readNVMLCalls(t, callLog)
	v, _ := sampleValue(body, metric, ioLabels("gpu_pcie", "transmit")...)
	assert.Contains(t, calls.counterGrowth(t, nvmlFieldTx), v, "gpu_pcie transmit: %.0f B is no counter growth the fake served", v)
	assert.Empty(t, sampleValues(body, metric, `component="gpu_c2c"`), "no C2C rates, no gpu_c2c series")
	assert.Len(t, sampleValues(body, "gpu_sm_active_ratio", `device="gpu0"`), 1, "the other GPM metrics are served:\n%s", body)
	out := logs()
	assert.Contains(t, out, "GPM metric 100: Not Supported")
	assert.Contains(t, out, "GPM metric 101: Not Supported")
	assert.NotContains(t, out, "\terror\t")
}

// setFakeNVMLClock sets the fake's clock (FAKE_NVML_CLOCK_FILE, µs since 1970) by writing a new
// file and renaming it over the old one: the fake reads the file at every call, and a read between
// a truncation and the write would give it the clock 0, a counter back at 0.
func setFakeNVMLClock(t *testing.T, path string, us int64) {
	t.Helper()
	tmp := path + ".new"
	require.NoError(t, os.WriteFile(tmp, []byte(strconv.FormatInt(us, 10)), 0o644))
	require.NoError(t, os.Rename(tmp, path))
}

// TestCollectorGPUNVMLNVLinkPerLink: the built collector with the opt-in gpu.nvlink.link.io on an
// A100 node through NVML (no DCGM, no GPM): each link's bytes are NVML's per-link counters
// FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX (138/139, KiB) asked with the link as scopeId, for the
// NVML_FI_DEV_NVLINK_LINK_COUNT links the GPU has (the fake's A100: 12), KiB x 1024. The fake's
// clock is a file the test sets (fakenvml.c FAKE_NVML_CLOCK_FILE, epoch 1.7e15 µs), so every read
// between two settings of it sees the same counters: 10 s and then 20 s after the fake's epoch,
// the NVLink traffic at 100 MiB/s a direction spread evenly over the links. Each link then serves
// exactly its counter's growth, the aggregate interconnect.io gpu_nvlink (the same fields with
// scopeId UINT_MAX) the total's, and the links sum to the aggregate up to the fake's integer
// division of the KiB among them (under 1 KiB a link).
func TestCollectorGPUNVMLNVLinkPerLink(t *testing.T) {
	const (
		epochUs    = int64(1_700_000_000_000_000) // fakenvml.c CLOCK_FILE_EPOCH_US
		links      = 12                           // the fake's A100
		nvlinkRate = 100 * nvmlMiB                // bytes/s a direction, all links together
	)
	kib := func(s int64) uint64 { return uint64(nvlinkRate*s) / 1024 } // fakenvml.c bytesAt / 1024
	wantLink := float64((kib(20)/links - kib(10)/links) * 1024)
	wantAggregate := float64((kib(20) - kib(10)) * 1024)

	clockFile := filepath.Join(t.TempDir(), "clock")
	setFakeNVMLClock(t, clockFile, epochUs+10_000_000)
	addr, logs, _ := nvmlCollector(t, fakenvml.Build(t), `
    source: nvml
    metrics:
      gpu.nvlink.link.io: {enabled: true}`, "FAKE_NVML_MODEL=a100", "FAKE_NVML_CLOCK_FILE="+clockFile)

	const metric = "gpu_nvlink_link_io_bytes_total"
	// Every link is served from its first reading on, at 0: nothing moved since the series began.
	deadline := time.Now().Add(waitServed)
	for len(sampleValues(metricsBody(t, addr), metric, `device="gpu0"`)) < 2*links {
		if time.Now().After(deadline) {
			t.Fatalf("no %d per-link NVLink series for gpu0 within %s:\n%s", 2*links, waitServed, metricsBody(t, addr))
		}
		time.Sleep(200 * time.Millisecond)
	}
	body := metricsBody(t, addr)
	for _, v := range sampleValues(body, metric, `device="gpu0"`) {
		assert.Zero(t, v, "the clock has not moved: no link carried anything yet")
	}

	setFakeNVMLClock(t, clockFile, epochUs+20_000_000)
	// The exporter takes in a scrape's metrics one by one, so a read can fall between the
	// aggregate's update and the links': such a read is tried again, a lasting mismatch fails at
	// the deadline.
	deadline = time.Now().Add(waitServed)
	for {
		body = metricsBody(t, addr)
		settled := true
		for _, dir := range []string{"transmit", "receive"} {
			perLink := sampleValues(body, metric, `device="gpu0"`, `direction="`+dir+`"`)
			aggregate, _ := sampleValue(body, "interconnect_io_bytes_total", ioLabels("gpu_nvlink", dir)...)
			settled = settled && len(perLink) == links && aggregate == wantAggregate
			for _, v := range perLink {
				settled = settled && v == wantLink
			}
		}
		if settled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gpu0's links did not each serve %.0f B (aggregate %.0f B) within %s:\n%s", wantLink, wantAggregate, waitServed, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for l := 0; l < links; l++ {
		v, ok := sampleValue(body, metric, `device="gpu0"`, `direction="transmit"`, `link="`+strconv.Itoa(l)+`"`)
		assert.True(t, ok && v == wantLink, "link %d: %v B", l, v)
	}
	_, ok := sampleValue(body, metric, `device="gpu0"`, `link="`+strconv.Itoa(links)+`"`)
	assert.False(t, ok, "no link past NVML_FI_DEV_NVLINK_LINK_COUNT")
	assert.InDelta(t, wantAggregate, links*wantLink, links*1024, "the links sum to the aggregate")
	assert.Len(t, sampleValues(body, metric, `device="gpu1"`), 2*links, "the second GPU's links too")
	out := logs()
	assert.Contains(t, out, `"gpu_nvlink": "counter NVML fields 138/139 FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX (cumulative KiB)"`)
	assert.NotContains(t, out, "\terror\t")
}

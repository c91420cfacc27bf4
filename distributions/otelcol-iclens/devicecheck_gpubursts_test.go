package otelcoliclens_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/fakenvml"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// The GPU traffic of the gpu_burst_cost tests: the fake libnvidia-ml.so.1 on the wall clock
// (fakenvml.c, no clock file), its GPUs' PCIe transmit in bursts of 20000 MiB/s for 40 ms of every
// 200 ms (FAKE_NVML_PCIE_BURST), 4000 MiB/s on average, their receive at a constant 3 MiB/s.
const (
	gpuBurstKnob    = "FAKE_NVML_PCIE_BURST=40000:200000:20000"
	gpuBurstRate    = 20000 << 20
	gpuBurstAverage = gpuBurstRate / 5
)

// runGPUBurstDeviceCheck runs the device check with the NVML source alone (DEVICE_CHECK_SOURCES=nvml)
// against the built collector on the fake libnvidia-ml.so.1 with the GPU traffic above, on
// deviceCheckNode, with a stand-in nvidia-smi whose GPU 0 link maximum is link ("5, 16":
// `--query-gpu=pcie.link.gen.max,pcie.link.width.max --format=csv,noheader,nounits`) and a
// traffic generator running load (a shell line; $1 its seconds). No dcgmi or nv-hostengine is on
// PATH: the DCGM-only checks SKIP.
func runGPUBurstDeviceCheck(t *testing.T, link, load string) (string, error) {
	t.Helper()
	bin := collectorBinary(t)
	libDir := fakenvml.Build(t)
	root := t.TempDir()
	testfs.WritePCINode(t, root, deviceCheckNode())

	fakes := t.TempDir()
	write := func(name, body string, mode os.FileMode) {
		require.NoError(t, os.WriteFile(filepath.Join(fakes, name), []byte(body), mode))
	}
	write("topo.txt", topoMatrix(dgxTopo, [2]string{"0", "1"}), 0o644)
	write("link.txt", link+"\n", 0o644)
	write("nvidia-smi", `#!/bin/sh
case "$*" in
  -L) printf 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-fake-0)\nGPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-fake-1)\n' ;;
  "topo -m") cat "$(dirname "$0")/topo.txt" ;;
  "-i 0 --query-gpu=pcie.link.gen.max,pcie.link.width.max --format=csv,noheader,nounits") cat "$(dirname "$0")/link.txt" ;;
  *--query-gpu=index,pci.bus_id*) printf '0, 00000000:1B:00.0\n1, 00000000:3B:00.0\n' ;;
  *--query-gpu=*) printf 'index, name, pci.bus_id\n0, NVIDIA H100 80GB HBM3, 00000000:1B:00.0\n1, NVIDIA H100 80GB HBM3, 00000000:3B:00.0\n' ;;
esac
`, 0o755)
	for _, tool := range []string{"ethtool", "lspci", "rdma"} {
		write(tool, "#!/bin/sh\nexit 1\n", 0o755)
	}
	write("pcie-load", "#!/bin/sh\n"+load+"\n", 0o755)

	cmd := exec.Command(deviceCheckScript(t))
	cmd.Env = append(os.Environ(),
		"PATH="+pathWithout(t, fakes, "dcgmi", "nv-hostengine", "nvcc", "perf"),
		"ICLENS_COLLECTOR="+bin,
		"LD_LIBRARY_PATH="+libDir, "FAKE_NVML_MODEL=h100", gpuBurstKnob,
		"DEVICE_CHECK_SOURCES=nvml",
		"DEVICE_CHECK_LOAD="+filepath.Join(fakes, "pcie-load"),
		// Four seconds a window: the NVML run's traffic and each of gpu_burst_cost's three runs.
		"DEVICE_CHECK_SECONDS=4",
		// The fake's traffic never stops, so the last scrape follows the traffic at once.
		"DEVICE_CHECK_SETTLE=0",
		"DEVICE_CHECK_HOST_SECONDS=1",
		"DEVICE_CHECK_BURST_SECONDS=1",
		"DEVICE_CHECK_ROOT="+root,
		"DEVICE_CHECK_OUT="+t.TempDir(),
	)
	out, err := cmd.CombinedOutput()
	t.Logf("device-check:\n%s", out)
	return string(out), err
}

// gpuBurstCost asserts the cost part of gpu_burst_cost: the collector's CPU at each period and
// what the sampler's share comes to a pass.
func gpuBurstCost(t *testing.T, out, traffic string) {
	t.Helper()
	assert.Regexp(t, `(?m)^  collector CPU \(gpu receiver alone, source nvml, collection 1s, a scrape a second\) over [0-9.]+ s: `+
		`[0-9.]+ % of a core without the fast sampler, [0-9.]+ % at 10ms \(GPU 0 traffic: `+traffic+`\), [0-9.]+ % at 100ms$`, out)
	assert.Regexp(t, `(?m)^  the sampler: [0-9.]+ % of a core at 10ms, about [0-9.]+ us a pass over 2 GPUs \([0-9.]+ us a GPU\); `+
		`[0-9.]+ % at 100ms, about [0-9.]+ us a pass$`, out)
	assert.Contains(t, out, "  4 peak series at 10ms, 4 at 100ms, 0 without the sampler\n", "two GPUs, two directions")
}

// gpuBurstPeak is the transmit or receive peak gpu_burst_cost read for GPU 0.
func gpuBurstPeak(t *testing.T, out, dir string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  gpu_pcie ` + dir + `: peak ([0-9.e+]+) B/s \(the highest of [0-9]+ scrapes\)$`).FindStringSubmatch(out)
	require.NotNil(t, m, "no %s peak in the output", dir)
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return v
}

// TestDeviceCheckGPUBurstsPass: on an H100 node with NVML alone (DCGM's checks SKIP), the gpu
// receiver's fast sampler serves GPU 0's peaks at 10ms, transmit at the bursts' rate and receive
// at its constant rate, each at least the served and the driven averages and at most 1.3 x the
// Gen5 x16 link: gpu_burst_cost passes with its cost lines, and so does every other check.
func TestDeviceCheckGPUBurstsPass(t *testing.T) {
	t.Parallel() // the device check's windows wait on the clock, not the CPU (Makefile E2E_PARALLEL)
	// The generator says what the fake moves: host->device is GPU 0's receive, device->host its
	// transmit.
	out, err := runGPUBurstDeviceCheck(t, "5, 16", "sleep \"$1\"\necho $((3145728 * $1)) $((4194304000 * $1)) \"$1\"")
	require.NoError(t, err)
	assert.Contains(t, out, "device-check: PASS gpu_burst_cost\n")
	assert.NotContains(t, out, "FAIL")
	gpuBurstCost(t, out, "custom")
	assert.Contains(t, out, "  GPU 0 (0000:1b:00.0, gpu0): link maximum Gen5 x16, 3.938 GB/s a lane: 6.3008e+10 B/s\n")
	assert.InEpsilon(t, gpuBurstRate, gpuBurstPeak(t, out, "transmit"), 0.05)
	assert.InEpsilon(t, 3<<20, gpuBurstPeak(t, out, "receive"), 0.01)
	for _, dir := range []string{"transmit", "receive"} {
		assert.Regexp(t, `(?m)^  gpu_pcie `+dir+`: at least 0\.9 x the served average [0-9.e+]+ B/s \([0-9.e+]+ B in [0-9.]+ s \+ 1 s\): ok$`, out)
		assert.Regexp(t, `(?m)^  gpu_pcie `+dir+`: at least 0\.9 x the driven average [0-9.e+]+ B/s \([0-9.e+]+ B in 4 s\): ok$`, out)
		assert.Regexp(t, `(?m)^  gpu_pcie `+dir+`: at most 1\.3 x the link maximum 6\.301e\+10 B/s \([0-9.e+-]+ of it\): ok$`, out)
	}
	// The NVML run's other checks: what sysfs, nvidia-smi and the generator say.
	for _, c := range []string{"gpu_pcie_bytes_nvml", "gpu_bus_ids_nvml", "gpu_numa_nvml", "gpu_nvlink_per_link_nvml", "gpu_nic_pcie_path"} {
		assert.Contains(t, out, "device-check: PASS "+c+"\n")
	}
	assert.Contains(t, out, "device-check: SKIP gpu_link_health\n  DEVICE_CHECK_SOURCES (nvml) has no dcgm")
}

// TestDeviceCheckGPUBurstsFail: nvidia-smi says GPU 0's link is Gen1 x1 (250 MB/s), below the
// 21 GB/s bursts its transmit peaks at, as a stale value stamped with the time of the call would
// read: gpu_burst_cost fails on transmit's upper bound, naming it, while receive (3 MiB/s) and
// both lower bounds hold. The generator cannot say what it moved ("?"), so the peaks are held
// against the served averages alone, and the cost part still runs.
func TestDeviceCheckGPUBurstsFail(t *testing.T) {
	t.Parallel() // the device check's windows wait on the clock, not the CPU (Makefile E2E_PARALLEL)
	out, err := runGPUBurstDeviceCheck(t, "1, 1", "sleep \"$1\"\necho \"? ? $1\"")
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the script must fail: %v", err)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, out, "device-check: FAIL gpu_burst_cost\n")
	gpuBurstCost(t, out, "custom")
	assert.Contains(t, out, "  the traffic generator (custom) does not say what it moved: peaks against the served average only\n")
	assert.NotContains(t, out, "the driven average")
	assert.InEpsilon(t, gpuBurstRate, gpuBurstPeak(t, out, "transmit"), 0.05)
	assert.Regexp(t, `(?m)^  gpu_pcie transmit: at most 1\.3 x the link maximum 2\.5e\+08 B/s \(8[0-9.]+ of it\): MISMATCH$`, out)
	assert.Regexp(t, `(?m)^  gpu_pcie receive: at most 1\.3 x the link maximum 2\.5e\+08 B/s \([0-9.e+-]+ of it\): ok$`, out)
	assert.Len(t, regexp.MustCompile(`(?m)^  gpu_pcie (transmit|receive): at least 0\.9 x the served average .*: ok$`).FindAllString(out, -1), 2)
	assert.Len(t, regexp.MustCompile(`(?m)^  gpu_pcie .*: MISMATCH$`).FindAllString(out, -1), 1, "only the transmit upper bound")
}

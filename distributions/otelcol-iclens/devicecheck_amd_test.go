package otelcoliclens_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// The AMD copies of the device check's test: what the stand-in firmware (amdFirmware) adds to
// the gpu_metrics tables while a copy runs, and what the copy stub (amdLoadStub) says it moved in
// its DEVICE_CHECK_SECONDS.
const (
	amdSeconds = 8
	// 2 GB/s summed into pcie_bandwidth_acc once per accumulation cycle while the host copy runs
	// (the reading the receiver assumes: the growth over accumulation_counter's is the average
	// GB/s, 10^9 B): 16 GB over the copy, h2d and d2h half each.
	amdPCIeGBps = 2
	// 100000 KB/s on each of seven XGMI links while the GPU 0 -> GPU 1 copy runs, into GPU 0's
	// xgmi_write_data_acc and GPU 1's xgmi_read_data_acc: 7 x 1e5 x 1024 B/s.
	amdXGMIKBps  = 100_000
	amdHostBytes = amdSeconds * amdPCIeGBps * 1e9
	amdP2PBytes  = amdSeconds * 7 * amdXGMIKBps * 1024
)

// amdFirmware rewrites the two MI300Xs' gpu_metrics tables (version 1.8) every 20 ms, as the SMU
// refreshes them: accumulation_counter counts every refresh; while flags/host.on exists each
// refresh adds amdPCIeGBps to GPU 0's pcie_bandwidth_acc; while flags/p2p.on exists GPU 0's
// xgmi_write_data_acc and GPU 1's xgmi_read_data_acc grow by amdXGMIKBps a second on links 0-6,
// by the time the refresh covers. Each table is written whole and renamed into place.
func amdFirmware(t *testing.T, root, flags string, gpus []testfs.AMDGPU) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	m := [2]testfs.GPUMetrics{}
	for i := range m {
		m[i] = testfs.GPUMetrics{FormatRevision: 1, ContentRevision: 8, AverageUMCActivity: 40, PCIeLinkWidth: 16, PCIeLinkSpeed: 320, PCIeBandwidthAcc: 1000}
		for l := 0; l < 7; l++ {
			m[i].XGMIReadDataAcc[l], m[i].XGMIWriteDataAcc[l] = 5000, 5000
		}
	}
	on := func(name string) bool { _, err := os.Stat(filepath.Join(flags, name)); return err == nil }
	var kb float64
	write := func() {
		for i, g := range gpus {
			dir := filepath.Join(root, "sys", "devices", g.RootBus, g.Address)
			tmp := filepath.Join(dir, ".gpu_metrics")
			if err := os.WriteFile(tmp, testfs.GPUMetricsTable(m[i]), 0o444); err == nil {
				_ = os.Rename(tmp, filepath.Join(dir, "gpu_metrics"))
			}
		}
	}
	write()
	wg.Add(1)
	go func() {
		defer wg.Done()
		last := time.Now()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				dt := now.Sub(last).Seconds()
				last = now
				for i := range m {
					m[i].AccumulationCounter++
				}
				if on("host.on") {
					m[0].PCIeBandwidthAcc += amdPCIeGBps
				}
				if on("p2p.on") {
					kb += amdXGMIKBps * dt
					for l := 0; l < 7; l++ {
						m[0].XGMIWriteDataAcc[l] = 5000 + uint64(kb)
						m[1].XGMIReadDataAcc[l] = 5000 + uint64(kb)
					}
				}
				write()
			}
		}
	}()
}

// amdLoadStub is DEVICE_CHECK_AMD_LOAD: "host SECONDS" or "p2p SECONDS" raises the firmware's flag
// for its seconds and says it moved factor x what the firmware adds meanwhile.
func amdLoadStub(flags string, factor float64) string {
	return fmt.Sprintf(`#!/bin/sh
touch %[1]s/$1.on
sleep "$2"
rm -f %[1]s/$1.on
case $1 in
  host) echo %.0[2]f %.0[2]f "$2" ;;
  p2p) echo %.0[3]f "$2" ;;
esac
`, flags, factor*amdHostBytes/2, factor*amdP2PBytes)
}

// runAMDDeviceCheck runs the device check on an MI300X node without ROCm (two GPUs laid out by
// testfs.AMDGPU, their tables kept by amdFirmware), the copies claiming factor x what they moved.
func runAMDDeviceCheck(t *testing.T, factor float64) (string, error) {
	bin := collectorBinary(t)
	root, fakes, flags := t.TempDir(), t.TempDir(), t.TempDir()
	gpus := []testfs.AMDGPU{
		{Card: 0, Address: "0000:05:00.0", RootBus: "pci0000:00", NUMANode: 0, ProductName: "AMD Instinct MI300X"},
		{Card: 1, Address: "0000:15:00.0", RootBus: "pci0000:10", NUMANode: 1, ProductName: "AMD Instinct MI300X"},
	}
	var tree testfs.Tree
	for _, g := range gpus {
		tree.AMDGPU(g)
	}
	require.NoError(t, tree.Write(root))
	amdFirmware(t, root, flags, gpus)
	writeStubs(t, fakes, map[string]string{
		"amdload":    amdLoadStub(flags, factor),
		"nvidia-smi": "#!/bin/sh\necho 'No devices were found'\nexit 6\n",
	})
	cmd := exec.Command(deviceCheckScript(t))
	cmd.Env = append(os.Environ(),
		"PATH="+fakes+string(os.PathListSeparator)+os.Getenv("PATH"),
		"ICLENS_COLLECTOR="+bin,
		fmt.Sprintf("DEVICE_CHECK_SECONDS=%d", amdSeconds),
		"DEVICE_CHECK_AMD_LOAD="+filepath.Join(fakes, "amdload"),
		"DEVICE_CHECK_ROOT="+root,
		"DEVICE_CHECK_OUT="+t.TempDir(),
	)
	out, err := cmd.CombinedOutput()
	t.Logf("device-check:\n%s", out)
	return string(out), err
}

// TestDeviceCheckAMDCopies: where the collector's gpu_pcie (pcie_bandwidth_acc over
// accumulation_counter, in GB/s, integrated) and gpu_xgmi (KB x 1024) grow by what the copies
// moved, gpu_amd_xgmi_pcie_bandwidth passes: GPU 0's PCIe against the host copy's h2d + d2h, GPU
// 0's XGMI transmit and GPU 1's receive against the GPU 0 -> GPU 1 copy.
func TestDeviceCheckAMDCopies(t *testing.T) {
	t.Parallel() // the device check's windows wait on the clock, not the CPU (Makefile E2E_PARALLEL)
	out, err := runAMDDeviceCheck(t, 1)
	require.NoError(t, err)
	assert.Contains(t, out, "device-check: PASS gpu_amd_xgmi_pcie_bandwidth\n")
	assert.Contains(t, out, "  host copy on GPU 0 (custom; collector gpu0 is 0000:05:00.0): host->device 8000000000 B, device->host 8000000000 B in 8 s\n")
	assert.Regexp(t, `  gpu0 gpu_pcie both: served [0-9.e+]+ B, driven 1\.6e\+10 B \([01](\.\d+)? of it\), allowed [0-9.e+]+\.\.[0-9.e+]+ B: ok\n`, out)
	assert.Regexp(t, `  gpu0 gpu_xgmi transmit: served [0-9.e+]+ B, driven 5\.734e\+09 B \([01](\.\d+)? of it\), allowed .*: ok\n`, out)
	assert.Regexp(t, `  gpu1 gpu_xgmi receive: served [0-9.e+]+ B, driven 5\.734e\+09 B .*: ok\n`, out)
	assert.NotContains(t, out, "FAIL")
}

// TestDeviceCheckAMDCopiesDisagree: copies that moved twice what the tables grew by (a
// pcie_bandwidth_acc that counts one direction of two, an XGMI counter in 2 KB units): the check
// fails, on the PCIe figure and on both XGMI ends.
func TestDeviceCheckAMDCopiesDisagree(t *testing.T) {
	t.Parallel() // the device check's windows wait on the clock, not the CPU (Makefile E2E_PARALLEL)
	out, err := runAMDDeviceCheck(t, 2)
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the script must fail: %v", err)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, out, "device-check: FAIL gpu_amd_xgmi_pcie_bandwidth\n")
	assert.Regexp(t, `  gpu0 gpu_pcie both: served .*\(0\.\d+ of it\).*: MISMATCH\n`, out)
	assert.Regexp(t, `  gpu0 gpu_xgmi transmit: .*: MISMATCH\n`, out)
	assert.Regexp(t, `  gpu1 gpu_xgmi receive: .*: MISMATCH\n`, out)
}

package otelcoliclens_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// What the Grace load run's replay counts per sample (writePhasedRecording), on the GB200 fixture
// (receiver/cpuuncorereceiver/testdata/gb200: two sockets, nvidia_*_pmu_0 on CPU 0 and _1 on
// CPU 72). The background: 100 cmem_rd_data and 1000 B of cmem_wr_total_bytes a second on each
// socket, 10 B/s into root port 0 of socket 0. The read window: 1e6 cmem_rd_data a second on
// socket 0 (32 MB/s at 32 B a count), the write window 16 MB/s of cmem_wr_total_bytes; six samples
// each, so the load moved 192 MB and 96 MB.
const (
	graceReadCounts  = 1_000_000
	graceWriteBytes  = 16_000_000
	graceReadDriven  = loadActiveSamples * 32 * graceReadCounts
	graceWriteDriven = loadActiveSamples * graceWriteBytes
	// The host window: 5 MB/s into root port 3, where the NIC's 16 MB (the window doubles its
	// counters, 2e6 words of 4 B each way) enter. The gdr window: 50 MB/s into the same port.
	graceHostPortBytes = 5_000_000
	graceGDRPortBytes  = 50_000_000
)

// graceEvents are the events the cpuuncore receiver opens on the GB200 fixture at
// pcie.granularity port: cmem_rd_data (0x1a5) and cmem_wr_total_bytes (0x1db) on each SCF PMU,
// rd_bytes_loc (0x0) and wr_bytes_loc (0x2) on each NVLink-C2C0 PMU, and the PCIE PMU's
// rd_bytes_loc/rem and wr_bytes_loc/rem (0x0-0x3) for each of its ten root_port bits (config1).
// hostSocket is the socket whose root port 3 carries the host window's bytes; bounce adds, in the
// gdr window, 20 MB/s of CPU-memory reads on socket 0 (a transfer staged in host memory).
func graceEvents(hostSocket int, bounce bool) []phasedEvent {
	var ev []phasedEvent
	for s, cpu := range []int{0, 72} {
		rd, wr := every(100), every(1000)
		if s == 0 {
			rd = plus(rd, in(1, graceReadCounts))
			wr = plus(wr, in(2, graceWriteBytes))
			if bounce {
				rd = plus(rd, in(4, 20_000_000/32))
			}
		}
		scf, c2c, pcie := "nvidia_scf_pmu_", "nvidia_nvlink_c2c0_pmu_", "nvidia_pcie_pmu_"
		n := string(rune('0' + s))
		ev = append(ev, phasedEvent{cpu: cpu, pmu: scf + n, config: 0x1a5, step: rd}, phasedEvent{cpu: cpu, pmu: scf + n, config: 0x1db, step: wr},
			phasedEvent{cpu: cpu, pmu: c2c + n, config: 0x0}, phasedEvent{cpu: cpu, pmu: c2c + n, config: 0x2})
		for port := 0; port < 10; port++ {
			for c := uint64(0); c < 4; c++ {
				e := phasedEvent{cpu: cpu, pmu: pcie + n, config: c, config1: 1 << port}
				switch {
				case s == 0 && port == 0 && c == 2:
					e.step = every(10)
				case port == 3 && c == 2:
					var f []func(int) uint64
					if s == hostSocket {
						f = append(f, in(3, graceHostPortBytes))
					}
					if s == 0 {
						f = append(f, in(4, graceGDRPortBytes))
					}
					e.step = plus(f...)
				}
				ev = append(ev, e)
			}
		}
	}
	return ev
}

// runGraceDeviceCheck runs the device check on a GB200 node: the fixture's PMUs and NUMA nodes,
// testfs.GraceNode's PCI tree (mlx5_0 behind root port 0000:00:00.0 on node 0, mlx5_1 behind
// 0010:00:00.0 on node 1) with mlx5_0's data counters at 2e6 words and mlx5_1's at 1000, the load
// run replaying graceEvents(hostSocket, bounce), a memory load stub claiming readBytes and
// writeBytes, DEVICE_CHECK_HOST_LOAD doubling every RDMA counter (hostGrow) and a GPUDirect load
// that only waits.
func runGraceDeviceCheck(t *testing.T, hostSocket int, bounce bool, readBytes, writeBytes uint64) (string, error) {
	root := t.TempDir()
	copyFixture(t, "gb200", root)
	testfs.WritePCINode(t, root, testfs.GraceNode(true))
	setCounters(t, root, "mlx5_0", "2000000", "port_xmit_data", "port_rcv_data")
	setCounters(t, root, "mlx5_1", "1000", "port_xmit_data", "port_rcv_data")
	fakes := t.TempDir()
	writeStubs(t, fakes, map[string]string{
		"memload": memLoadStub(readBytes, writeBytes),
		"grow":    hostGrow,
		"gdr":     "#!/bin/sh\nsleep \"$1\"\n",
	})
	rec := writePhasedRecording(t, "gb200", loadSamples, graceEvents(hostSocket, bounce))
	out, err := runLoadDeviceCheck(t, root, fakes, rec,
		"DEVICE_CHECK_MEM_LOAD="+filepath.Join(fakes, "memload"),
		"DEVICE_CHECK_HOST_LOAD="+filepath.Join(fakes, "grow")+" "+root,
		"DEVICE_CHECK_GDR_LOAD="+filepath.Join(fakes, "gdr"))
	args, rerr := os.ReadFile(filepath.Join(fakes, "memload.args"))
	require.NoError(t, rerr, "the memory load ran")
	assert.Equal(t, "read 10 0\nwrite 10 0\n", string(args), "on node 0, Grace's first node with CPUs")
	return out, err
}

// TestDeviceCheckGraceLoads: on a GB200 node whose collector serves what the loads moved (the
// memory load's bytes at 32 B a cmem_rd_data count, the NIC's traffic on a root port of its own
// socket, GPUDirect traffic on the root ports and not in CPU memory), the Grace checks that need a
// load pass, each comparing served with driven.
func TestDeviceCheckGraceLoads(t *testing.T) {
	t.Parallel() // the device check's windows wait on the clock, not the CPU (Makefile E2E_PARALLEL)
	out, err := runGraceDeviceCheck(t, 0, false, graceReadDriven, graceWriteDriven)
	require.NoError(t, err)
	for _, c := range []string{"cpuuncore_grace_cmem_bytes", "cpuuncore_grace_root_port", "cpuuncore_grace_gpudirect"} {
		assert.Contains(t, out, "device-check: PASS "+c+"\n")
	}
	assert.Contains(t, out, "  no perf on PATH\n", "the perf comparison SKIPs, the load comparison decides")
	assert.Contains(t, out, "  memory load: custom, DEVICE_CHECK_MEM_LOAD, memory on node 0\n")
	assert.Regexp(t, `  read window \([0-9.]+ s\): served 1\.92\d*e\+08 B, driven 1\.92e\+08 B in 10 s, background [0-9.e+]+ B; allowed [0-9.e+]+\.\.[0-9.e+]+ B: ok; implied unit 3[12](\.\d+)? B \(assumed 32\)`, out)
	assert.Regexp(t, `  write window \([0-9.]+ s\): served 9\.6\d*e\+07 B, driven 9\.6e\+07 B in 10 s, .*: ok;`, out)
	assert.Contains(t, out, "  the load's NIC: mlx5_0/1, ")
	assert.Contains(t, out, "root port 0000:00:00.0, NUMA node 0\n")
	assert.Contains(t, out, "  socket0/pcie/port3 is on the NIC's NUMA node 0: ok; the collector names no PCI address for it: this load maps port3 to root port 0000:00:00.0 (mlx5_0/1)\n")
	assert.Regexp(t, `  cpu_memory above background -?[0-9.e+]+ B, -?[0-9.e+-]+ of cpu_pcie above background 3(\.\d+)?e\+08 B \(allowed 0\.1\): ok`, out)
	assert.Contains(t, out, "device-check: SKIP cpuuncore_xeonmax_hbm_bytes\n")
	assert.NotContains(t, out, "FAIL")
}

// TestDeviceCheckGraceLoadsDisagree: the same node where the memory load moved a 32nd of what
// the collector served (a unit 32 times the true one), the host window's bytes went through a
// root port of the other socket than the NIC that carried them, and the GPUDirect load moved 20
// MB/s through CPU memory: the three checks fail, each naming what is off.
func TestDeviceCheckGraceLoadsDisagree(t *testing.T) {
	t.Parallel() // the device check's windows wait on the clock, not the CPU (Makefile E2E_PARALLEL)
	out, err := runGraceDeviceCheck(t, 1, true, graceReadDriven/32, graceWriteDriven)
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the script must fail: %v", err)
	assert.Equal(t, 1, exit.ExitCode())
	for _, c := range []string{"cpuuncore_grace_cmem_bytes", "cpuuncore_grace_root_port", "cpuuncore_grace_gpudirect"} {
		assert.Contains(t, out, "device-check: FAIL "+c+"\n")
	}
	assert.Regexp(t, `  read window .*: MISMATCH; implied unit 10\d\d(\.\d+)? B \(assumed 32\)`, out)
	assert.Regexp(t, `  write window .*: ok;`, out)
	assert.Contains(t, out, "  socket1/pcie/port3 is on NUMA node 1, the NIC on 0: MISMATCH\n")
	assert.Regexp(t, `  cpu_memory above background [0-9.e+]+ B, 0\.4\d* of cpu_pcie above background [0-9.e+]+ B \(allowed 0\.1\): MISMATCH`, out)
}

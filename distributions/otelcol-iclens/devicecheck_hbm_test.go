package otelcoliclens_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Xeon Max load run's replay (writePhasedRecording) on the spr_hbm fixture
// (receiver/cpuuncorereceiver/testdata/spr_hbm: two SPR sockets, CPUs 0 and 56, with the
// uncore_hbm_N PMUs): in the read window uncore_hbm_0 of socket 0 counts 500000
// UNC_MCHBM_CAS_COUNT.RD a second (32 MB/s at the 64 B a CAS the receiver assumes), in the write
// window 250000 .WR a second; each HBM controller counts 10 of each a second as the background.
const (
	hbmReadCAS     = 500_000
	hbmWriteCAS    = 250_000
	hbmReadDriven  = loadActiveSamples * 64 * hbmReadCAS
	hbmWriteDriven = loadActiveSamples * 64 * hbmWriteCAS
)

// hbmEvents are every event the cpuuncore receiver opens on the fixture (as
// TestCollectorServesXeonMaxHBMAndPeerWrites lists them), the HBM CAS counts as above, every
// other at 0.
func hbmEvents() []phasedEvent {
	var ev []phasedEvent
	add := func(pmu string, step func(cpu int, config uint64) func(int) uint64, configs ...uint64) {
		for _, cpu := range []int{0, 56} {
			for _, c := range configs {
				ev = append(ev, phasedEvent{cpu: cpu, pmu: pmu, config: c, step: step(cpu, c)})
			}
		}
	}
	none := func(int, uint64) func(int) uint64 { return nil }
	for i := range 8 {
		add(fmt.Sprintf("uncore_imc_%d", i), none, 0xcf05, 0xf005)
		hbm := func(cpu int, c uint64) func(int) uint64 {
			switch {
			case i == 0 && cpu == 0 && c == 0xcf05:
				return plus(every(10), in(1, hbmReadCAS))
			case i == 0 && cpu == 0 && c == 0xf005:
				return plus(every(10), in(2, hbmWriteCAS))
			}
			return every(10)
		}
		add(fmt.Sprintf("uncore_hbm_%d", i), hbm, 0xcf05, 0xf005)
	}
	for i := range 12 {
		add(fmt.Sprintf("uncore_iio_free_running_%d", i), none, 0x20ff, 0x21ff, 0x22ff, 0x23ff, 0x24ff, 0x25ff, 0x26ff, 0x27ff)
		add(fmt.Sprintf("uncore_iio_%d", i), none, 0x70ff000000483, 0x70ff0000001c0, 0x70ff0000002c0)
	}
	return ev
}

// runHBMDeviceCheck runs the device check on the Xeon Max fixture in flat mode (its two nodes
// with CPUs, and nodes 2 and 3 without CPUs holding 16 GB each, the HBM), the load run replaying
// hbmEvents, a memory load stub claiming readBytes and writeBytes.
func runHBMDeviceCheck(t *testing.T, readBytes, writeBytes uint64) (string, error) {
	root := t.TempDir()
	copyFixture(t, "spr_hbm", root)
	for _, n := range []string{"node2", "node3"} {
		dir := filepath.Join(root, "sys", "devices", "system", "node", n)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "cpulist"), []byte("\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "meminfo"), []byte("Node "+n[4:]+" MemTotal:       16777216 kB\n"), 0o644))
	}
	fakes := t.TempDir()
	writeStubs(t, fakes, map[string]string{"memload": memLoadStub(readBytes, writeBytes)})
	rec := writePhasedRecording(t, "spr_hbm", 40, hbmEvents())
	out, err := runLoadDeviceCheck(t, root, fakes, rec, "DEVICE_CHECK_MEM_LOAD="+filepath.Join(fakes, "memload"))
	args, rerr := os.ReadFile(filepath.Join(fakes, "memload.args"))
	require.NoError(t, rerr, "the memory load ran")
	assert.Equal(t, "read 10 2\nwrite 10 2\n", string(args), "on node 2, the first node without CPUs (flat mode's HBM)")
	return out, err
}

// TestDeviceCheckXeonMaxHBM: where the HBM CAS counts at 64 B each are what the memory load moved
// on the HBM node, cpuuncore_xeonmax_hbm_bytes passes; the Grace checks SKIP (no SCF PMU).
func TestDeviceCheckXeonMaxHBM(t *testing.T) {
	t.Parallel() // the device check's windows wait on the clock, not the CPU (Makefile E2E_PARALLEL)
	out, err := runHBMDeviceCheck(t, hbmReadDriven, hbmWriteDriven)
	require.NoError(t, err)
	assert.Contains(t, out, "device-check: PASS cpuuncore_xeonmax_hbm_bytes\n")
	assert.Regexp(t, `  read window \([0-9.]+ s\): served 1\.92\d*e\+08 B, driven 1\.92e\+08 B in 10 s, .*: ok; implied unit 6[34](\.\d+)? B \(assumed 64\)`, out)
	assert.Regexp(t, `  write window \([0-9.]+ s\): served 9\.6\d*e\+07 B, driven 9\.6e\+07 B in 10 s, .*: ok; implied unit 6[34](\.\d+)? B \(assumed 64\)`, out)
	assert.Contains(t, out, "device-check: SKIP cpuuncore_grace_root_port\n")
	assert.NotContains(t, out, "FAIL")
}

// TestDeviceCheckXeonMaxHBMDisagree: where the memory load moved half of what the collector
// served (an HBM CAS of 32 B, not the 64 B assumed), both windows fail: twice the true unit is
// past the check's 1.5 x driven plus background.
func TestDeviceCheckXeonMaxHBMDisagree(t *testing.T) {
	t.Parallel() // the device check's windows wait on the clock, not the CPU (Makefile E2E_PARALLEL)
	out, err := runHBMDeviceCheck(t, hbmReadDriven/2, hbmWriteDriven/2)
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the script must fail: %v", err)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, out, "device-check: FAIL cpuuncore_xeonmax_hbm_bytes\n")
	assert.Regexp(t, `  read window .*: MISMATCH; implied unit 12[78](\.\d+)? B \(assumed 64\)`, out)
	assert.Regexp(t, `  write window .*: MISMATCH; implied unit 12[78](\.\d+)? B \(assumed 64\)`, out)
}

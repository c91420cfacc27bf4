package otelcoliclens_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
)

// The device check's load run (device-check.sh run_load) scrapes the collector between windows of
// DEVICE_CHECK_MEM_SECONDS: idle, read, write, host, gdr. Its tests replay the cpuuncore receiver
// (DEVICE_CHECK_UNCORE_REPLAY) on the recording's one-sample-a-second pace, which starts at the
// collector's first scrape: the script's first scrape of the run falls 2-3 s later, and window p
// (idle 0, read 1, write 2, host 3, gdr 4) then covers samples 4+10p..13+10p. A load's counts are
// recorded in samples 6+10p..11+10p only, two samples inside each edge, so that a window that
// starts or ends a second late still holds all of its load and none of the next one's.
const (
	loadWindowSeconds = 10
	loadActiveSamples = 6
	loadSamples       = 70
)

// loadPhase is the window of the load run that sample k (1-based) counts in as a load (1 read,
// 2 write, 3 host, 4 gdr), or 0 where only the background counts.
func loadPhase(k int) int {
	for p := 1; p <= 4; p++ {
		if k >= 6+10*p && k <= 11+10*p {
			return p
		}
	}
	return 0
}

// phasedEvent is one counter a replayed cpuuncore receiver reads, and its step in each sample.
type phasedEvent struct {
	cpu             int
	pmu             string
	config, config1 uint64
	step            func(k int) uint64
}

// writePhasedRecording writes a cpuuncore recording (internal/recording/FORMAT.md) of the fixture
// host tree under receiver/cpuuncorereceiver/testdata/<fixture>, samples one second apart, each
// counter adding its step of the sample.
func writePhasedRecording(t *testing.T, fixture string, samples int, events []phasedEvent) string {
	t.Helper()
	tree, err := recording.Snapshot(uncoreFixture(fixture), []string{"sys", "proc"}, nil)
	require.NoError(t, err)
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), fixture+"-load.jsonl")
	w, err := recording.Create(path, recording.Header{Receiver: "cpuuncore", Host: fixture, Created: start,
		Interval: recording.Duration(time.Second), Note: "device check load run on the " + fixture + " fixture"})
	require.NoError(t, err)
	require.NoError(t, w.Write(recording.Record{Time: start, Tree: tree}))
	sum := make([]uint64, len(events))
	for k := 1; k <= samples; k++ {
		var s recording.PerfSample
		ns := uint64(k) * uint64(time.Second)
		for i, e := range events {
			if e.step != nil {
				sum[i] += e.step(k)
			}
			s.Perf = append(s.Perf, recording.PerfReading{CPU: e.cpu, PMU: e.pmu, Config: e.config, Config1: e.config1,
				Value: sum[i], Enabled: ns, Running: ns})
		}
		b, err := json.Marshal(s)
		require.NoError(t, err)
		require.NoError(t, w.Write(recording.Record{Time: start.Add(time.Duration(k) * time.Second), Sample: b}))
	}
	require.NoError(t, w.Close())
	return path
}

func uncoreFixture(name string) string {
	return filepath.Join("..", "..", "receiver", "cpuuncorereceiver", "testdata", name)
}

// copyFixture materializes the fixture's sys and proc trees under root, as DEVICE_CHECK_ROOT, so
// that the device check finds the fixture's PMUs and NUMA nodes there.
func copyFixture(t *testing.T, fixture, root string) {
	t.Helper()
	tree, err := recording.Snapshot(uncoreFixture(fixture), []string{"sys", "proc"}, nil)
	require.NoError(t, err)
	require.NoError(t, recording.Materialize(root, tree))
}

// pathWithout is a PATH of fakes, then this machine's PATH less the named programs (each dir's
// entries linked into one directory): so that the device check runs as on a machine without them.
func pathWithout(t *testing.T, fakes string, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	drop := map[string]bool{}
	for _, n := range names {
		drop[n] = true
	}
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if drop[e.Name()] {
				continue
			}
			if _, err := os.Lstat(filepath.Join(dir, e.Name())); err == nil {
				continue // an earlier PATH entry has it
			}
			_ = os.Symlink(filepath.Join(d, e.Name()), filepath.Join(dir, e.Name()))
		}
	}
	return fakes + string(os.PathListSeparator) + dir
}

// runLoadDeviceCheck runs the device check on root (DEVICE_CHECK_ROOT) with fakes first on PATH,
// perf and numactl left out (the host run's perf comparison SKIPs: its PMUs are this fixture's,
// not the kernel's), the load run's cpuuncore receiver replaying rec, and env added.
func runLoadDeviceCheck(t *testing.T, root, fakes, rec string, env ...string) (string, error) {
	t.Helper()
	bin := collectorBinary(t)
	for _, tool := range []string{"nvidia-smi", "ethtool", "lspci", "rdma"} {
		require.NoError(t, os.WriteFile(filepath.Join(fakes, tool), []byte("#!/bin/sh\nexit 1\n"), 0o755))
	}
	cmd := exec.Command(deviceCheckScript(t))
	cmd.Env = append(os.Environ(),
		"PATH="+pathWithout(t, fakes, "perf", "numactl", "dcgmi"),
		"ICLENS_COLLECTOR="+bin,
		"DEVICE_CHECK_HOST_SECONDS=2",
		"DEVICE_CHECK_BURST_SECONDS=1",
		fmt.Sprintf("DEVICE_CHECK_MEM_SECONDS=%d", loadWindowSeconds),
		"DEVICE_CHECK_UNCORE_REPLAY="+rec,
		"DEVICE_CHECK_ROOT="+root,
		"DEVICE_CHECK_OUT="+t.TempDir(),
	)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	t.Logf("device-check:\n%s", out)
	return string(out), err
}

// memLoadStub is DEVICE_CHECK_MEM_LOAD: it notes its arguments in memload.args beside itself,
// waits its seconds and says it read readBytes (read) or wrote writeBytes (write) in them.
func memLoadStub(readBytes, writeBytes uint64) string {
	return fmt.Sprintf(`#!/bin/sh
echo "$*" >>"$(dirname "$0")/memload.args"
sleep "$2"
case $1 in
  read) echo %d 0 "$2" ;;
  write) echo 0 %d "$2" ;;
esac
`, readBytes, writeBytes)
}

// writeStubs writes the named executables into dir.
func writeStubs(t *testing.T, dir string, stubs map[string]string) {
	t.Helper()
	for name, body := range stubs {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755))
	}
}

// setCounters writes value into each of an RDMA port's counters files named.
func setCounters(t *testing.T, root, dev, value string, names ...string) {
	t.Helper()
	for _, n := range names {
		require.NoError(t, os.WriteFile(filepath.Join(root, "sys", "class", "infiniband", dev, "ports", "1", "counters", n), []byte(value+"\n"), 0o644))
	}
}

// every is a step of n in every sample; in, a step of n in the samples of load window p.
func every(n uint64) func(int) uint64 { return func(int) uint64 { return n } }
func in(p int, n uint64) func(int) uint64 {
	return func(k int) uint64 {
		if loadPhase(k) == p {
			return n
		}
		return 0
	}
}
func plus(fs ...func(int) uint64) func(int) uint64 {
	return func(k int) uint64 {
		var s uint64
		for _, f := range fs {
			s += f(k)
		}
		return s
	}
}

// TestDeviceCheckMemLoad builds the device check's memory load (.ci/device-check/mem_load.c) as
// the script does (cc -O2 -pthread) and runs it briefly each way on a 64 MiB buffer: it prints
// "read_bytes write_bytes seconds" in whole 1 MiB chunks, the read mode with one write pass (the
// first touch) and the write mode without reads, and refuses a mode it does not know.
func TestDeviceCheckMemLoad(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no cc to build mem_load.c")
	}
	bin := filepath.Join(t.TempDir(), "mem_load")
	src, err := filepath.Abs(filepath.Join("..", "..", ".ci", "device-check", "mem_load.c"))
	require.NoError(t, err)
	build, err := exec.Command(cc, "-O2", "-pthread", "-Wall", "-Werror", "-o", bin, src).CombinedOutput()
	require.NoError(t, err, "%s", build)
	for _, mode := range []string{"read", "write"} {
		out, err := exec.Command(bin, mode, "0.3", "64", "2").Output()
		require.NoError(t, err)
		var rd, wr uint64
		var secs float64
		_, err = fmt.Sscanf(string(out), "%d %d %f\n", &rd, &wr, &secs)
		require.NoError(t, err, "%q", out)
		assert.InDelta(t, 0.3, secs, 0.5, mode)
		assert.Zero(t, rd%(1<<20), "%s: whole chunks", mode)
		assert.Zero(t, wr%(1<<20), "%s: whole chunks", mode)
		if mode == "read" {
			assert.Positive(t, rd)
			assert.Equal(t, uint64(64<<20), wr, "the first touch, one pass")
		} else {
			assert.Zero(t, rd)
			assert.Positive(t, wr)
		}
	}
	assert.Error(t, exec.Command(bin, "copy", "1").Run())
}

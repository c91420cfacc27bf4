package ncclreceiver

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nvidiaproc"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// TestGPUOfProcess joins a process to its GPU through /proc/<pid>/environ (fs/proc/base.c
// environ_read: NUL-separated) and the NVIDIA module's GPU list (open-gpu-kernel-modules
// kernel-open/nvidia/nv-procfs.c nv_procfs_read_gpu_info), with CUDA_VISIBLE_DEVICES renumbering
// the GPUs as the CUDA runtime does (CUDA C Programming Guide, "CUDA Environment Variables").
func TestGPUOfProcess(t *testing.T) {
	root := t.TempDir()
	gpus := testfs.HopperGPUs()
	var tree testfs.Tree
	tree.NvidiaGPUs(gpus)
	env := map[int][]string{
		100: {"PATH=/usr/bin", "CUDA_VISIBLE_DEVICES=3"},                   // Slurm's --gpus-per-task=1: one GPU, renumbered 0
		101: {"CUDA_VISIBLE_DEVICES=5,2", "LOCAL_RANK=1"},                  // renumbered: CUDA 1 is physical 2
		102: {"LOCAL_RANK=6"},                                              // torchrun, every GPU visible
		103: {"CUDA_VISIBLE_DEVICES=" + gpus[4].UUID[:12], "LOCAL_RANK=0"}, // a unique UUID prefix
		104: {"CUDA_VISIBLE_DEVICES=1,9,2", "LOCAL_RANK=1"},                // 9 names no GPU: the list ends at it, one GPU left
		109: {"CUDA_VISIBLE_DEVICES=1,2", "LOCAL_RANK=5"},                  // a local rank past the visible GPUs
		105: {"CUDA_VISIBLE_DEVICES=MIG-0c5bb1c9-7e1f-5b8e-9b24-1f0c8c1a0a11"},
		106: {"HOME=/root"},                            // several GPUs, no local rank
		107: {"CUDA_VISIBLE_DEVICES=", "LOCAL_RANK=0"}, // empty: no GPU
		108: {"SLURM_LOCALID=7", "SLURM_JOB_ID=4242"},  // srun without torchrun
	}
	for pid, e := range env {
		tree.ProcEnviron(pid, e)
	}
	require.NoError(t, tree.Write(root))
	proc := filepath.Join(root, "proc")
	list, err := nvidiaproc.List(proc)
	require.NoError(t, err)
	require.Len(t, list, 8)
	assert.Equal(t, gpus[0].UUID, list[0].UUID)

	want := map[int64]string{
		100: gpus[3].BusID, 101: gpus[2].BusID, 102: gpus[6].BusID, 103: gpus[4].BusID,
		104: gpus[1].BusID, 108: gpus[7].BusID,
	}
	for pid, bus := range want {
		got, err := gpuOfProcess(proc, pid, list)
		require.NoError(t, err, "pid %d", pid)
		assert.Equal(t, bus, got, "pid %d", pid)
	}
	for _, c := range []struct {
		pid  int64
		want string
	}{
		{109, "LOCAL_RANK=\"5\" is not one of its 2 visible GPUs"},
		{105, "names no GPU"},
		{106, "sees 8 GPUs and has no LOCAL_RANK"},
		{107, "names no GPU"},
		{999, "no such file"},
	} {
		_, err := gpuOfProcess(proc, c.pid, list)
		assert.ErrorContains(t, err, c.want, "pid %d", c.pid)
	}
	_, err = gpuOfProcess(proc, 100, nil)
	assert.ErrorContains(t, err, "no GPU in")

	none, err := nvidiaproc.List(filepath.Join(t.TempDir(), "proc"))
	require.NoError(t, err, "a node without the NVIDIA module is not an error")
	assert.Empty(t, none)
}

// TestJoinFollowsPIDReuse: a pid reused by a later job's process is joined to that process's GPU,
// and a process that cannot be joined is said once however many series it opens.
func TestJoinFollowsPIDReuse(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	gpus := testfs.HopperGPUs()
	var tree testfs.Tree
	tree.NvidiaGPUs(gpus)
	tree.ProcEnviron(71, []string{"CUDA_VISIBLE_DEVICES=1"})
	require.NoError(t, tree.Write(root))
	s, logs := startScraper(t, testConfig(root, dir), nil)
	defer func() { require.NoError(t, s.shutdown(context.Background())) }()
	assert.Equal(t, gpus[1].BusID, s.busIDOf(testHost, 71))

	tree.ProcEnviron(71, []string{"CUDA_VISIBLE_DEVICES=5"}) // the next job, the same pid
	require.NoError(t, tree.Write(root))
	assert.Equal(t, gpus[5].BusID, s.busIDOf(testHost, 71))

	for range 3 {
		assert.Empty(t, s.busIDOf(testHost, 72)) // no /proc/72
	}
	assert.Equal(t, 1, logs.FilterMessageSnippet("not joined to a GPU").Len())
	assert.Empty(t, s.busIDOf("another-node", 71), "another node's pid is not ours")
}

package owner_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/owner"
	"github.com/otelcol-iclens/otelcol-iclens/internal/owner/ownertest"
)

func scontrolConfig(command ...string) owner.Config {
	cfg := owner.DefaultConfig()
	cfg.Scontrol.Enabled = true
	cfg.Scontrol.Command = command
	cfg.Scontrol.NodeName = "dgx01"
	return cfg
}

// TestScontrolGRESIndices reads `scontrol show job -d` (testdata: a 2-node job holding GPUs 0-3 of
// each node, an array task with GPUs 4 and 6 and a NIC GRES, a job on another node, a pending job
// and one whose index is garbage): each running job's GPUs of this node are its, the array task
// under <array job>_<task> as SLURM_JOB_ID's mapping files name it; the garbage job's GPU has no
// owner and is said once; nothing of the other node or of the pending job counts.
func TestScontrolGRESIndices(t *testing.T) {
	root := ownertest.WriteDGXNode(t)
	cfg := scontrolConfig("cat", filepath.Join("testdata", "scontrol-show-job-d.txt"))
	require.NoError(t, cfg.Validate())
	r, logs := newResolver(t, cfg, root)
	r.Refresh(context.Background())
	s := r.Snapshot()
	for i := 0; i < 4; i++ {
		assert.Equal(t, owner.Owner{Kind: owner.KindJob, Source: owner.SourceSlurm, JobID: "4711", User: "alice", Partition: "gpu"},
			ownerOf(s, "gpu_pcie", ownertest.GPUAddress(i)), "GPU %d", i)
	}
	got := owners(s)
	assert.Equal(t, "job 4700_3", got["gpu_pcie "+ownertest.GPUAddress(4)])
	assert.Equal(t, "job 4700_3", got["gpu_pcie "+ownertest.GPUAddress(6)])
	assert.Equal(t, "bob", ownerOf(s, "gpu_pcie", ownertest.GPUAddress(6)).User)
	assert.NotContains(t, got, "gpu_pcie "+ownertest.GPUAddress(5), "dgx03's job and the pending one own nothing here")
	assert.NotContains(t, got, "gpu_pcie "+ownertest.GPUAddress(7))
	warned := logs.FilterMessageSnippet("entry ignored").All()
	require.Len(t, warned, 1)
	assert.Equal(t, "scontrol job 4718", warned[0].ContextMap()["key"])
	assert.Contains(t, warned[0].ContextMap()["error"], `bad index range "seven"`)
}

// TestScontrolHangs: a slurmctld that does not answer costs one refresh the timeout, is said once,
// and leaves no owner from it; a failing command likewise.
func TestScontrolHangs(t *testing.T) {
	root := ownertest.WriteDGXNode(t)
	// A refresh that waited for the command would take its five minutes; one that waits the
	// timeout returns long before the minute allowed here (a bound for a busy machine, not a speed).
	cfg := scontrolConfig("sleep", "300")
	cfg.Scontrol.Timeout = 200 * time.Millisecond
	r, logs := newResolver(t, cfg, root)
	for range 2 {
		start := time.Now()
		r.Refresh(context.Background())
		require.Less(t, time.Since(start), time.Minute, "each refresh waits the timeout, not the command")
	}
	assert.NotContains(t, owners(r.Snapshot()), "gpu_pcie "+ownertest.GPUAddress(0))
	unavailable := logs.FilterMessageSnippet("source unavailable").All()
	require.Len(t, unavailable, 1, "said once")
	assert.Contains(t, unavailable[0].ContextMap()["error"], "no answer within 200ms")

	cfg = scontrolConfig("sh", "-c", "echo 'slurm_load_jobs error: Unable to contact slurm controller' >&2; exit 1")
	r, logs = newResolver(t, cfg, root)
	r.Refresh(context.Background())
	unavailable = logs.FilterMessageSnippet("source unavailable").All()
	require.Len(t, unavailable, 1)
	assert.Contains(t, unavailable[0].ContextMap()["error"], "Unable to contact slurm controller")
}

// TestScontrolConfigValidate names the key.
func TestScontrolConfigValidate(t *testing.T) {
	cfg := scontrolConfig()
	cfg.Scontrol.Timeout = 0
	err := cfg.Validate()
	assert.ErrorContains(t, err, "scontrol.command: must name a program")
	assert.ErrorContains(t, err, "scontrol.timeout: must be positive, got 0s")
}

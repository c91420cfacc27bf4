package sysfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProcEnviron reads a NUL-separated environment as the kernel writes it: the last entry with
// its NUL, an entry without '=' skipped, a value holding '=' whole, and only the variables named.
func TestProcEnviron(t *testing.T) {
	p := filepath.Join(t.TempDir(), "environ")
	require.NoError(t, os.WriteFile(p, []byte("SLURM_JOB_ID=4711\x00junk\x00OPTS=a=b\x00CUDA_VISIBLE_DEVICES=2,3\x00"), 0o600))
	all, err := ProcEnviron(p)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"SLURM_JOB_ID": "4711", "OPTS": "a=b", "CUDA_VISIBLE_DEVICES": "2,3"}, all)
	some, err := ProcEnviron(p, "CUDA_VISIBLE_DEVICES", "LOCAL_RANK")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"CUDA_VISIBLE_DEVICES": "2,3"}, some)
	_, err = ProcEnviron(filepath.Join(t.TempDir(), "gone"))
	assert.Error(t, err, "the process ended")
}

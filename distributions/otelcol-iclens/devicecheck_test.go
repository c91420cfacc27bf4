package otelcoliclens_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeviceCheckWithoutGPU runs `make device-check`'s script as it runs on a machine without an
// NVIDIA GPU (no nvidia-smi on PATH): it must say so and succeed, so that the same command can be
// run on every machine. On a GPU machine the script itself is the check (README, "device check").
func TestDeviceCheckWithoutGPU(t *testing.T) {
	if _, err := exec.LookPath("nvidia-smi"); err == nil {
		t.Skip("this machine has nvidia-smi: run `make device-check` instead")
	}
	script, err := filepath.Abs(filepath.Join("..", "..", ".ci", "device-check", "device-check.sh"))
	require.NoError(t, err)
	cmd := exec.Command(script)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "ICLENS_COLLECTOR=/nonexistent"}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "device-check: no NVIDIA GPU found (no nvidia-smi on PATH): nothing to check\n", string(out))
}

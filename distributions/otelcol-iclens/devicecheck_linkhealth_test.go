package otelcoliclens_test

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeviceCheckLinkHealth: on the fake libdcgm.so.4's GB200 GPU (FAKE_DCGM_NVLINK5: GPU 0 with
// every NVLink5 and C2C link-health field, GPU 1 an H100 with none) the DCGM run serves each
// field's growth within what dcgmi dmon (dcgmiStub) read around it, and GPU 1 serves none where
// dcgmi reads N/A: gpu_link_health passes, field by field. TestDeviceCheckPasses is the H100 node
// (no GPU has them), TestDeviceCheckFails the wrong dcgmi read.
func TestDeviceCheckLinkHealth(t *testing.T) {
	t.Parallel() // the device check's windows wait on the clock, not the CPU (Makefile E2E_PARALLEL)
	out, err := runDeviceCheck(t, topoMatrix(dgxTopo, [2]string{"0", "1"}), 2000, 1000, "FAKE_DCGM_NVLINK5=1")
	require.NoError(t, err)
	assert.Contains(t, out, "device-check: PASS gpu_link_health\n")
	assert.NotContains(t, out, "FAIL")
	// Each of GPU 0's 16 fields is compared; the constant ones exactly.
	assert.Len(t, regexp.MustCompile(`(?m)^  gpu0 1[24]\d\d [a-z_]+: served .*: ok$`).FindAllString(out, -1), 16)
	assert.Contains(t, out, "  gpu0 1400 crc: served +0, dcgmi 7, 7, 7, 7: growth allowed 0..0: ok\n")
	assert.Regexp(t, `  gpu0 1204 rx_malformed: served \+[1-9]\d*, dcgmi 12040, 12040, 12040, 512040: growth allowed 0\.\.500000: ok\n`, out)
	assert.Contains(t, out, "  gpu0 1216 symbol: served 2.5e-09, dcgmi 0.000, 0.000, 0.000, 0.000: allowed -0.0005..0.0005: ok\n")
	assert.Contains(t, out, "  gpu1: dcgmi N/A for every field, none served\n")
}

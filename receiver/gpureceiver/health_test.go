package gpureceiver

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDCGMLinkHealth: with the opt-in gpu.nvlink.errors, gpu.nvlink.bit_error_rate and
// gpu.c2c.errors, DCGM's link-health fields (dcgm_fields.h, go-dcgm v1.4611.0: the NVLink5
// counters 1204-1214 and 1219 and BER ratios 1216/1218, "NVLink5+ only. Returns aggregate value
// across all links"; the C2C counters 1400-1402) are read per GPU and kind. gpu0 is a GB200's
// Blackwell GPU (NVLink5 and a C2C link); gpu1 is an H100 (NVLink4), where DCGM answers
// DCGM_INT64_NOT_SUPPORTED / DCGM_FP64_BLANK+2 for every one of them: no series and no line said
// about it. Off by default, none of these fields is read.
func TestDCGMLinkHealth(t *testing.T) {
	f := newFakeDCGM(2)
	f.identity[0] = [3]string{"NVIDIA GB200", "GPU-00000000-0000-0000-0000-000000000000", "00000008:01:00.0"}
	set := func(step int64) {
		for k, id := range dcgmNVLinkErrorFields {
			f.setInt(0, id, 100*int64(k)+step*int64(k+1))
			f.setInt(1, id, dcgmInt64NotSupported)
		}
		for k, id := range dcgmC2CErrorFields {
			f.setInt(0, id, 7+step*int64(k))
			f.setInt(1, id, dcgmInt64NotSupported)
		}
		f.setDouble(0, 1216, 2.5e-9) // DCGM_FI_DEV_NVLINK_SYMBOL_BER_RATIO, before FEC
		f.setDouble(0, 1218, 1e-15)  // DCGM_FI_DEV_NVLINK_EFFECTIVE_BER_RATIO, after it
		f.setDouble(1, 1216, dcgmFP64Blank+2)
		f.setDouble(1, 1218, dcgmFP64Blank+2)
	}
	set(0)
	s, logs, clock := newTestScraper(t, f, func(c *Config) {
		c.Metrics.GpuNvlinkErrors.Enabled = true
		c.Metrics.GpuNvlinkBitErrorRate.Enabled = true
		c.Metrics.GpuC2cErrors.Enabled = true
	})
	require.NoError(t, s.start(context.Background(), nil))
	scrapeOnce(t, s)
	set(10)
	clock.t = clock.t.Add(10 * time.Second)
	m := scrapeOnce(t, s)

	assert.Len(t, find(m, "gpu.nvlink.errors", "device", "gpu0"), 11, "eleven NVLink5 error kinds")
	assert.EqualValues(t, 10, one(t, m, "gpu.nvlink.errors", "device", "gpu0", "nvlink.error", "rx_malformed").i,
		"1204 since the first reading")
	assert.EqualValues(t, 80, one(t, m, "gpu.nvlink.errors", "device", "gpu0", "nvlink.error", "recovery").i,
		"1213 (_RECOVERY_EVENT_TOTAL), the eighth field")
	assert.EqualValues(t, 110, one(t, m, "gpu.nvlink.errors", "device", "gpu0", "nvlink.error", "effective").i,
		"1219 (_EFFECTIVE_ERROR_TOTAL)")
	assert.EqualValues(t, 20, one(t, m, "gpu.c2c.errors", "device", "gpu0", "c2c.error", "replay_back_to_back").i, "1402")
	assert.EqualValues(t, 0, one(t, m, "gpu.c2c.errors", "device", "gpu0", "c2c.error", "crc").i, "1400 did not move")
	assert.InDelta(t, 2.5e-9, one(t, m, "gpu.nvlink.bit_error_rate", "device", "gpu0", "nvlink.ber", "symbol").f, 1e-21)
	assert.InDelta(t, 1e-15, one(t, m, "gpu.nvlink.bit_error_rate", "device", "gpu0", "nvlink.ber", "effective").f, 1e-27)
	for _, name := range []string{"gpu.nvlink.errors", "gpu.c2c.errors", "gpu.nvlink.bit_error_rate"} {
		assert.Empty(t, find(m, name, "device", "gpu1"), "%s: the NVLink4 GPU has none", name)
	}
	for _, e := range logs.All() {
		assert.NotRegexp(t, `nvlink_errors|nvlink_ber|c2c_errors`, fmt.Sprint(e.Message, e.ContextMap()),
			"a GPU without these fields is not an error")
	}

	// A counter that goes back (the driver reset, or the GPU was reset) starts its series over.
	before := one(t, m, "gpu.nvlink.errors", "device", "gpu0", "nvlink.error", "rx_malformed").start
	set(10)
	f.setInt(0, dcgmNVLinkErrorFields[0], 3)
	clock.t = clock.t.Add(10 * time.Second)
	m = scrapeOnce(t, s)
	reset := one(t, m, "gpu.nvlink.errors", "device", "gpu0", "nvlink.error", "rx_malformed")
	assert.EqualValues(t, 3, reset.i, "the new series counts from the reset")
	assert.Greater(t, reset.start, before, "with a new start time")

	// Off by default: not one health field is watched or read.
	df := newFakeDCGM(1)
	df.setInt(0, 1204, 1)
	df.setInt(0, 1400, 1)
	df.setDouble(0, 1216, 1e-9)
	def, _, _ := newTestScraper(t, df, nil)
	require.NoError(t, def.start(context.Background(), nil))
	dm := scrapeOnce(t, def)
	plan := def.src.(*dcgmSource).plan
	health := slices.Concat(dcgmNVLinkErrorFields, dcgmNVLinkBERFields, dcgmC2CErrorFields)
	for _, id := range append(plan.latest, plan.history...) {
		assert.NotContains(t, health, id, "field %d read by default", id)
	}
	assert.Empty(t, find(dm, "gpu.nvlink.errors"))
}

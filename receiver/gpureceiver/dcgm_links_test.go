package gpureceiver

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDCGMPerLinkNVLinkErrors: with the opt-in gpu.nvlink.link.errors, DCGM's per-link data-link
// error counters (dcgm_fields.h DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_L<n>_TOTAL 400-405/451-456/
// 406-408/481-483, REPLAY 420-.../487-489, RECOVERY 430-.../491-493) are read per link. A GPU with
// 12 links (A100) answers blank for links 12-17: no series, no error. Off by default, none of these
// fields, nor any per-link rate, is read.
func TestDCGMPerLinkNVLinkErrors(t *testing.T) {
	f := newFakeDCGM(1)
	crc := func(v int64) {
		for l := 0; l < 12; l++ {
			f.setInt(0, dcgmNVLinkCRCFields[l], 1)
			f.setInt(0, dcgmNVLinkReplayFields[l], 2)
			f.setInt(0, dcgmNVLinkRecoveryFields[l], 0)
		}
		f.setInt(0, dcgmNVLinkCRCFields[10], v) // link 10's id is 455
	}
	crc(1000)
	s, logs, clock := newTestScraper(t, f, func(c *Config) { c.Metrics.GpuNvlinkLinkErrors.Enabled = true })
	require.NoError(t, s.start(context.Background(), nil))
	scrapeOnce(t, s)
	crc(1250)
	clock.t = clock.t.Add(10 * time.Second)
	m := scrapeOnce(t, s)
	assert.EqualValues(t, 250, one(t, m, "gpu.nvlink.link.errors", "device", "gpu0", "link", int64(10), "nvlink.error", "crc").i,
		"CRC errors of link 10 since the first reading")
	assert.EqualValues(t, 0, one(t, m, "gpu.nvlink.link.errors", "device", "gpu0", "link", int64(3), "nvlink.error", "replay").i)
	assert.Len(t, find(m, "gpu.nvlink.link.errors", "device", "gpu0"), 12*3, "12 links, three kinds")
	for _, e := range logs.FilterMessage(msgSeriesMissing).All() {
		assert.NotContains(t, e.ContextMap()["key"], "nvlink_link", "links the GPU lacks are not errors")
	}

	// Off by default: not one per-link field is watched or read.
	df := newFakeDCGM(1)
	df.prof[0] = append(df.prof[0], 1040, 1041) // the GPU has them: only the config keeps them out
	df.setInt(0, dcgmNVLinkCRCFields[0], 1)
	def, _, _ := newTestScraper(t, df, nil)
	require.NoError(t, def.start(context.Background(), nil))
	scrapeOnce(t, def)
	plan := def.src.(*dcgmSource).plan
	for _, id := range append(plan.latest, plan.history...) {
		perLinkRate := id >= 1040 && id <= 1075 // DCGM_FI_PROF_NVLINK_L0_TX_BYTES .. L17_RX_BYTES
		assert.False(t, perLinkRate || slices.Contains(dcgmNVLinkCRCFields[:], id) || slices.Contains(dcgmNVLinkReplayFields[:], id) || slices.Contains(dcgmNVLinkRecoveryFields[:], id), "field %d read by default", id)
	}
}

// TestDCGMPerLinkNVLinkBytes: with the opt-in gpu.nvlink.link.io, DCGM's per-link rates
// DCGM_FI_PROF_NVLINK_L<n>_TX/RX_BYTES (1040 + 2n / 1041 + 2n, bytes/s) are integrated over every
// sample per link, as the aggregate 1011/1012 is. A 12-link GPU lists links 0-11 among its
// profiling fields; links 12-17 are neither read nor said missing. The aggregate
// interconnect.io gpu_nvlink is unchanged.
func TestDCGMPerLinkNVLinkBytes(t *testing.T) {
	f := newFakeDCGM(1)
	base := int64(1_800_000_000) * sec
	for l := uint16(0); l < 12; l++ {
		f.prof[0] = append(f.prof[0], 1040+2*l, 1041+2*l)
		for k := int64(1); k <= 10; k++ {
			f.addSample(0, 1040+2*l, base+k*sec, int64(l+1)*1000)
			f.addSample(0, 1041+2*l, base+k*sec, int64(l+1)*500)
		}
	}
	for k := int64(1); k <= 10; k++ {
		f.addSample(0, dcgmFieldNVLinkTxRate, base+k*sec, 78000) // the sum of the links' rates
	}
	s, logs, _ := newTestScraper(t, f, func(c *Config) { c.Metrics.GpuNvlinkLinkIo.Enabled = true })
	require.NoError(t, s.start(context.Background(), nil))
	m := scrapeOnce(t, s)
	link := func(l int64, dir string) int64 {
		return one(t, m, "gpu.nvlink.link.io", "device", "gpu0", "link", l, "direction", dir).i
	}
	assert.EqualValues(t, 9*4000, link(3, "transmit"), "ten 1 s samples at 4000 B/s: the first opens the series")
	assert.EqualValues(t, 9*6000, link(11, "receive"))
	assert.Len(t, find(m, "gpu.nvlink.link.io", "device", "gpu0"), 24, "12 links, two directions")
	assert.EqualValues(t, 9*78000, one(t, m, "interconnect.io", "device", "gpu0", "component", "gpu_nvlink", "direction", "transmit").i)
	for _, e := range logs.FilterMessage(msgSeriesMissing).All() {
		assert.NotContains(t, e.ContextMap()["error"], "nvlink_link", "links the GPU lacks are not missing")
	}
}

package gpureceiver

import (
	"context"
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
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

// blackwellPerLink is a DCGM 4.6 hostengine on one NVLink5 GPU (B200): 1040-1075 and 1532/1533
// are all listed among its profiling fields (DcgmModuleCore.cpp ProcessProfGetMetricGroups), and
// dcgmGetNvLinkLinkStatus names its 18 links. blackwellSeconds serves the samples: link l at (l+1) x 1000 B/s
// transmit and (l+1) x 500 B/s receive on the link's DCGM_FE_LINK entity, one sample a second;
// 1011/1012 carry their sums (171000 and 85500 B/s).
func blackwellPerLink() *fakeDCGM {
	f := newFakeDCGM(1)
	f.identity[0] = [3]string{"NVIDIA B200", "GPU-b2000000-0000-0000-0000-000000000000", "00000000:1B:00.0"}
	f.links = map[uint][]uint16{}
	for l := uint16(0); l < 18; l++ {
		f.prof[0] = append(f.prof[0], 1040+2*l, 1041+2*l)
		f.links[0] = append(f.links[0], l)
	}
	f.prof[0] = append(f.prof[0], dcgmFieldNVLinkTxPerLink, dcgmFieldNVLinkRxPerLink)
	return f
}

// blackwellSeconds adds the samples of seconds from..to: legacy is what 1040-1075 answer, a blank
// (the GPM metric is missing) or DCGM_INT64_NOT_SUPPORTED.
func blackwellSeconds(f *fakeDCGM, legacy int64, from, to int64) {
	base := int64(1_800_000_000) * sec
	for k := from; k <= to; k++ {
		ts := base + k*sec
		for l := uint16(0); l < 18; l++ {
			f.addSample(0, 1040+2*l, ts, legacy)
			f.addSample(0, 1041+2*l, ts, legacy)
			f.addLinkSample(0, l, dcgmFieldNVLinkTxPerLink, ts, int64(l+1)*1000)
			f.addLinkSample(0, l, dcgmFieldNVLinkRxPerLink, ts, int64(l+1)*500)
		}
		f.addSample(0, dcgmFieldNVLinkTxRate, ts, 171000)
		f.addSample(0, dcgmFieldNVLinkRxRate, ts, 85500)
	}
}

// linkSum returns the sum of gpu0's gpu.nvlink.link.io in one direction and how many links it has.
func linkSum(m pmetric.Metrics, dir string) (int64, int) {
	var sum int64
	ps := find(m, "gpu.nvlink.link.io", "device", "gpu0", "direction", dir)
	for _, p := range ps {
		sum += p.i
	}
	return sum, len(ps)
}

// TestDCGMPerLinkNVLinkBytesFELink: on an NVLink5 GPU whose per-link fields 1040-1075 give no
// value (blank for gpmDecidePolls polls, or NOT_SUPPORTED at once), gpu.nvlink.link.io comes from
// DCGM 4.6's 1532/1533 read on each link's DCGM_FE_LINK entity (a dcgm_link_t: type DCGM_FE_GPU,
// the link index, the GPU id), integrated over every sample like 1040-1075, `link` the entity's
// link index. The links sum to the aggregate interconnect.io gpu_nvlink in every scrape, from the
// first: the blanks of 1040-1075 open no series. Once settled, 1040-1075 are no longer watched
// and the links stay on 1532/1533.
func TestDCGMPerLinkNVLinkBytesFELink(t *testing.T) {
	for _, tc := range []struct {
		name   string
		legacy int64
		polls  int // polls until 1040-1075 leave the plan
	}{
		{"legacy blank", dcgmInt64Blank, gpmDecidePolls},
		{"legacy not supported", dcgmInt64NotSupported, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := blackwellPerLink()
			blackwellSeconds(f, tc.legacy, 1, 10)
			s, logs, clock := newTestScraper(t, f, func(c *Config) { c.Metrics.GpuNvlinkLinkIo.Enabled = true })
			require.NoError(t, s.start(context.Background(), nil))
			require.Len(t, f.linkWatches, 1, "one watch of the GPU's links")
			for _, links := range f.linkWatches {
				require.Len(t, links, 18, "the 18 links dcgmGetNvLinkLinkStatus names, no more")
				assert.Contains(t, links, dcgmLink{gpu: 0, index: 17})
			}
			for scrape := 1; scrape <= 5; scrape++ {
				m := scrapeOnce(t, s)
				link := func(l int64, dir string) int64 {
					return one(t, m, "gpu.nvlink.link.io", "device", "gpu0", "link", l, "direction", dir).i
				}
				k := int64(10*scrape - 1) // seconds integrated: the first sample opens each series
				assert.EqualValues(t, k*4000, link(3, "transmit"), "scrape %d: link 3 at 4000 B/s", scrape)
				assert.EqualValues(t, k*6000, link(11, "receive"), "scrape %d: link 11 at 6000 B/s", scrape)
				assert.EqualValues(t, k*18000, link(17, "transmit"), "scrape %d: link 17", scrape)
				for _, dir := range []string{"transmit", "receive"} {
					sum, n := linkSum(m, dir)
					assert.Equal(t, 18, n, "scrape %d %s: 18 links", scrape, dir)
					agg := one(t, m, "interconnect.io", "device", "gpu0", "component", "gpu_nvlink", "direction", dir).i
					assert.Equal(t, agg, sum, "scrape %d %s: the links sum to the aggregate", scrape, dir)
				}
				plan := s.src.(*dcgmSource).plan
				legacyWatched := slices.Contains(plan.history, uint16(1040))
				assert.Equal(t, scrape < tc.polls, legacyWatched, "scrape %d: 1040-1075 watched until settled", scrape)
				blackwellSeconds(f, tc.legacy, int64(10*scrape+1), int64(10*scrape+10))
				clock.t = clock.t.Add(10 * time.Second)
			}
			assert.Equal(t, perLinkEntity, s.src.(*dcgmSource).plan.perLink[0])
			l := logs.FilterMessage("GPU interconnect bytes: source per quantity").All()
			require.NotEmpty(t, l)
			assert.Equal(t, "rate DCGM fields 1532/1533 on DCGM_FE_LINK entities (bytes/s assumed, integrated)", l[len(l)-1].ContextMap()["gpu_nvlink_link"])
			for _, e := range logs.FilterMessage(msgSeriesMissing).All() {
				assert.NotContains(t, e.ContextMap()["key"], "nvlink", "nothing NVLink is missing")
			}
			assert.Zero(t, logs.FilterMessage(msgNotProvided).Len(), "the legacy fields' refusal is no news: 1532/1533 carry the links")
		})
	}
}

// TestDCGMPerLinkFELinkNotWhereLegacyWorks: a GPU listing both (a Hopper under DCGM 4.6) whose
// 1040-1075 give values keeps them: the first valid value drops the link watch, and the links'
// 1532/1533 samples (served here at other rates) are never counted. The first GPM sample is blank
// (1040-1075 and 1011/1012 alike): it opens each link's series as it opens the aggregate's, so
// that the links sum to the aggregate exactly.
func TestDCGMPerLinkFELinkNotWhereLegacyWorks(t *testing.T) {
	f := blackwellPerLink()
	base := int64(1_800_000_000) * sec
	for k := int64(1); k <= 10; k++ {
		first := func(v int64) int64 {
			if k == 1 {
				return dcgmInt64Blank
			}
			return v
		}
		f.addSample(0, dcgmFieldNVLinkTxRate, base+k*sec, first(171000))
		for l := uint16(0); l < 18; l++ {
			f.addSample(0, 1040+2*l, base+k*sec, first(int64(l+1)*1000))
			f.addSample(0, 1041+2*l, base+k*sec, first(int64(l+1)*500))
			// Wrong on purpose, and half a second off (another watch samples at other times):
			// counted, they would change every link's bytes.
			f.addLinkSample(0, l, dcgmFieldNVLinkTxPerLink, base+k*sec+sec/2, 7)
			f.addLinkSample(0, l, dcgmFieldNVLinkRxPerLink, base+k*sec+sec/2, 7)
		}
	}
	s, _, _ := newTestScraper(t, f, func(c *Config) { c.Metrics.GpuNvlinkLinkIo.Enabled = true })
	require.NoError(t, s.start(context.Background(), nil))
	require.Len(t, f.linkWatches, 1, "undecided: 1532/1533 are read too")
	m := scrapeOnce(t, s)
	assert.EqualValues(t, 9*4000, one(t, m, "gpu.nvlink.link.io", "device", "gpu0", "link", int64(3), "direction", "transmit").i)
	assert.EqualValues(t, 9*6000, one(t, m, "gpu.nvlink.link.io", "device", "gpu0", "link", int64(11), "direction", "receive").i)
	sum, n := linkSum(m, "transmit")
	assert.Equal(t, 18, n)
	assert.Equal(t, one(t, m, "interconnect.io", "device", "gpu0", "component", "gpu_nvlink", "direction", "transmit").i, sum,
		"the links sum to the aggregate")
	assert.Empty(t, f.linkWatches, "1040-1075 proved themselves: the link watch is gone")
	assert.Equal(t, perLinkLegacy, s.src.(*dcgmSource).plan.perLink[0])
}

// TestDCGMPerLinkFELinkOnly: a GPU listing 1532/1533 but none of 1040-1075 reads its links from
// 1532/1533 alone; a GPU without NVLink (no link in dcgmGetNvLinkLinkStatus) costs nothing and
// says nothing; a failing dcgmGetNvLinkLinkStatus is said once and costs the per-link bytes only.
// Off by default, link status is not asked and no link is watched.
func TestDCGMPerLinkFELinkOnly(t *testing.T) {
	f := newFakeDCGM(2)
	for g := uint(0); g < 2; g++ {
		f.prof[g] = append(f.prof[g], dcgmFieldNVLinkTxPerLink, dcgmFieldNVLinkRxPerLink)
	}
	f.links = map[uint][]uint16{0: {0, 1, 2, 3}} // gpu1: a PCIe GPU, no NVLink
	base := int64(1_800_000_000) * sec
	for k := int64(1); k <= 10; k++ {
		for l := uint16(0); l < 4; l++ {
			f.addLinkSample(0, l, dcgmFieldNVLinkTxPerLink, base+k*sec, int64(l+1)*100)
		}
	}
	s, logs, _ := newTestScraper(t, f, func(c *Config) { c.Metrics.GpuNvlinkLinkIo.Enabled = true })
	require.NoError(t, s.start(context.Background(), nil))
	m := scrapeOnce(t, s)
	assert.EqualValues(t, 9*300, one(t, m, "gpu.nvlink.link.io", "device", "gpu0", "link", int64(2), "direction", "transmit").i)
	assert.Len(t, find(m, "gpu.nvlink.link.io", "device", "gpu0", "direction", "transmit"), 4)
	assert.Empty(t, find(m, "gpu.nvlink.link.io", "device", "gpu1"))
	plan := s.src.(*dcgmSource).plan
	assert.Equal(t, []perLinkFrom{perLinkEntity, perLinkNone}, plan.perLink)
	assert.Len(t, plan.links, 4, "gpu0's four links")
	for _, e := range logs.FilterMessage(msgSeriesMissing).All() {
		assert.NotContains(t, e.ContextMap()["key"], "nvlink", "a GPU without NVLink is not missing links")
	}

	failing := newFakeDCGM(1)
	failing.prof[0] = append(failing.prof[0], dcgmFieldNVLinkTxPerLink, dcgmFieldNVLinkRxPerLink)
	failing.linksErr = &dcgmError{op: "listing NVLink links", code: dcgmStNVMLNotLoaded, msg: "NVML not loaded"}
	for k := int64(1); k <= 10; k++ {
		failing.addSample(0, dcgmFieldNVLinkTxRate, base+k*sec, 1000)
	}
	fs, flogs, _ := newTestScraper(t, failing, func(c *Config) { c.Metrics.GpuNvlinkLinkIo.Enabled = true })
	require.NoError(t, fs.start(context.Background(), nil))
	fm := scrapeOnce(t, fs)
	assert.Empty(t, find(fm, "gpu.nvlink.link.io"))
	assert.NotEmpty(t, find(fm, "interconnect.io", "component", "gpu_nvlink"), "the aggregate is unaffected")
	missing := flogs.FilterMessage(msgSeriesMissing).FilterField(zap.String("key", "gpu0/nvlink_links")).All()
	require.Len(t, missing, 1)
	assert.Contains(t, missing[0].ContextMap()["error"], "1532/1533")

	df := blackwellPerLink()
	def, _, _ := newTestScraper(t, df, nil)
	require.NoError(t, def.start(context.Background(), nil))
	scrapeOnce(t, def)
	assert.Zero(t, df.linkCalls, "off by default: no link status asked")
	assert.Empty(t, df.linkWatches, "off by default: no link watched")
}

// TestDCGMLinkEntityEncoding: dcgmLink.raw is dcgm_link_t's raw member as go-dcgm packs it
// (AddLinkEntityToGroup: byte 0 the entity group, bytes 1-2 the index little-endian, byte 3 the
// GPU id); an NVSwitch's link is not a GPU's.
func TestDCGMLinkEntityEncoding(t *testing.T) {
	l := dcgmLink{gpu: 7, index: 0x0123}
	b := []byte{dcgmFEGPU, 0, 0, 7}
	binary.LittleEndian.PutUint16(b[1:3], 0x0123)
	assert.EqualValues(t, binary.LittleEndian.Uint32(b), l.raw())
	back, ok := parseDCGMLink(l.raw())
	assert.True(t, ok)
	assert.Equal(t, l, back)
	_, ok = parseDCGMLink(uint(3) | 5<<8) // DCGM_FE_SWITCH
	assert.False(t, ok)
}

package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"errors"
	"fmt"
)

// Per-link NVLink bytes through DCGM 4.6's FE_LINK fields.
//
// dcgm_fields.h (go-dcgm v1.4611.0, lines 3521-3528): DCGM_FI_PROF_NVLINK_TX_BYTES_PER_LINK 1532
// and _RX_BYTES_PER_LINK 1533 are "Per-link NVLink GPM counters, keyed by a dcgm_link_t entity
// (DCGM_FE_LINK entity group). The link index carried in the entity selects the underlying NVML GPM
// per-link metric, so a single field id covers every link. Distinct from the GPU-wide
// DCGM_FI_PROF_NVLINK_TX/RX_BYTES."
//
// The header gives no unit. They are taken as bytes/s, like 1011/1012 and the per-link 1040-1075
// (GPM MiB/s x 2^20), and integrated over every sample the same way. DCGM 4.6's source (NVIDIA/DCGM
// "DCGM 4.6.0", commit 72fa3fe) agrees: dcgmlib/src/DcgmCacheManager.cpp ReadAndCacheNvLinkGpmBytes
// (lines 9467-9557) scales NVML's per-link GPM MiB/s by 1024 x 1024 ("to match the other GPM byte
// counters"), and dcgm_fields_internal.hpp 103-119 puts 1532/1533 in
// DCGM_FIELD_ID_IS_GPM_MIB_BANDWIDTH. Nobody has measured it on a GPU: it is unverified. `make
// device-check` (gpu_nvlink_per_link_<source>) compares a GPU's links with its NVLink total on real
// hardware.
//
// Where they are read. DCGM 4.6 lists 1532/1533 in the NVLink metric group of every GPM GPU
// (modules/core/DcgmModuleCore.cpp 2275-2278), next to 1040-1075, which it lists there whatever the
// GPU supports (the same group, 2262-2273). The per-link fields 1040-1075 stay the source where
// they work. On a GPU that lists both, 1532/1533 are read too until 1040-1075 prove themselves: one
// valid value and 1532/1533 are dropped; DCGM_ST_NOT_SUPPORTED, or gpmDecidePolls polls of blanks
// (a GPM value stays blank where the driver's NVML lacks the metric), and 1040-1075 are dropped.
// Meanwhile 1532/1533 carry the links from their first sample, and the blanks of 1040-1075 are held
// back (legacyLink) so that they do not move the series' baseline past them. On a GPU that lists
// only 1532/1533, they are the source. In DCGM 4.6 both read the same NVML GPM metric for links
// 0-17 (dcgmlib/src/dcgm_fields.cpp 6509-6536 NvLinkLinkIndexToGpmMetricId, 6670-6776): whether a
// GPU exists on which 1040-1075 fail and 1532/1533 work is not known; 1532/1533 alone reach links
// 18-35.
//
// Which links. dcgmGetEntityGroupEntities(DCGM_FE_LINK) does not list a GPU's links: DCGM 4.6
// answers it from the NVSwitch module (DcgmHostEngineHandler.cpp 243-265), which lists NVSwitch
// ports through NVSDM (DcgmNvsdmManager.cpp 1406-1424) and nothing through NSCQ
// (DCGM_ST_NOT_SUPPORTED, DcgmNscqManager.cpp 970-975). dcgmGetNvLinkLinkStatus does: a state per
// GPU and link index, and DcgmNvLinkLinkStateNotSupported for a link the GPU lacks (dcgm_structs.h
// 4083-4090). Only the links whose state is anything else are watched, so a link the GPU lacks
// costs nothing.

// dcgmLinkEntityFields are watched on the links' DCGM_FE_LINK entities.
var dcgmLinkEntityFields = []uint16{dcgmFieldNVLinkTxPerLink, dcgmFieldNVLinkRxPerLink}

// dcgmLinkEntitySpecs maps 1532/1533 onto the per-link rates; the link is the entity's, not the spec's.
var dcgmLinkEntitySpecs = map[uint16]dcgmFieldSpec{
	dcgmFieldNVLinkTxPerLink: {id: dcgmFieldNVLinkTxPerLink, q: qNVLinkLinkTxRate, history: true},
	dcgmFieldNVLinkRxPerLink: {id: dcgmFieldNVLinkRxPerLink, q: qNVLinkLinkRxRate, history: true},
}

// dcgmLink is one NVLink link of a GPU, the DCGM_FE_LINK entity dcgm_link_t (dcgm_structs.h
// 533-555): a packed union of {type:8, the entity group of the link's owner, DCGM_FE_GPU; index:16,
// the NVLink port index; gpuId:8} and its raw uint32, little-endian as go-dcgm packs it
// (pkg/dcgm/gpu_group.go AddLinkEntityToGroup, lines 91-102).
type dcgmLink struct {
	gpu   uint
	index uint16
}

// raw is the link's entity id.
func (l dcgmLink) raw() uint { return dcgmFEGPU | uint(l.index)<<8 | (l.gpu&0xff)<<24 }

// parseDCGMLink reads a DCGM_FE_LINK entity id; ok is false for a link that is not a GPU's (an
// NVSwitch port, type DCGM_FE_SWITCH).
func parseDCGMLink(raw uint) (dcgmLink, bool) {
	if raw&0xff != dcgmFEGPU {
		return dcgmLink{}, false
	}
	return dcgmLink{gpu: raw >> 24 & 0xff, index: uint16(raw >> 8)}, true
}

// perLinkFrom says where a GPU's per-link NVLink bytes are read from.
type perLinkFrom uint8

const (
	perLinkNone   perLinkFrom = iota
	perLinkLegacy             // DCGM_FI_PROF_NVLINK_L<n>_TX/RX_BYTES, 1040-1075, on the GPU
	perLinkEntity             // 1532/1533 on the GPU's DCGM_FE_LINK entities
	perLinkBoth               // both, until 1040-1075 prove themselves or not
)

// planPerLink decides where devices[i]'s per-link bytes come from, adjusting reads, and returns
// the links to watch as entities. supported holds the GPU's profiling fields; links lists the
// NVLink links of every GPU, asked of DCGM once per discovery and only when needed.
func (s *dcgmSource) planPerLink(dev gpuDevice, supported map[uint16]bool, profErr error, reads *quantitySet,
	links func() (map[uint][]uint16, error)) (perLinkFrom, []dcgmLink) {
	rates := []quantity{qNVLinkLinkTxRate, qNVLinkLinkRxRate}
	if !s.want.has(rates[0]) && !s.want.has(rates[1]) {
		return perLinkNone, nil
	}
	// The loop over dcgmFieldSpecs put the rates in reads where one of 1040-1075 is listed.
	legacy := reads.has(rates[0]) || reads.has(rates[1])
	entity := profErr == nil && supported[dcgmFieldNVLinkTxPerLink] && supported[dcgmFieldNVLinkRxPerLink]
	switch s.linkDecided[dev.key()] {
	case perLinkLegacy:
		entity = false
	case perLinkEntity:
		legacy = false
	}
	var mine []dcgmLink
	if entity {
		all, err := links()
		key := dev.name + "/nvlink_links"
		if err != nil {
			s.faults.missing(key, fmt.Errorf("per-link NVLink bytes from DCGM fields 1532/1533 missing: listing the GPU's links: %w", err))
		} else {
			s.faults.recover(key)
		}
		for _, l := range all[dev.id] {
			mine = append(mine, dcgmLink{gpu: dev.id, index: l})
		}
		// No link (a PCIe GPU without NVLink, which DCGM 4.6 lists 1532/1533 on too): nothing missing.
		entity = len(mine) > 0
	}
	for _, q := range rates {
		*reads &^= 1 << q
		if (legacy || entity) && s.want.has(q) {
			reads.add(q)
		}
	}
	switch {
	case legacy && entity:
		return perLinkBoth, mine
	case legacy:
		return perLinkLegacy, nil
	case entity:
		return perLinkEntity, mine
	}
	return perLinkNone, nil
}

// readsLegacyLinks reports whether the fields 1040-1075 are read for devices[i].
func (p *dcgmPlan) readsLegacyLinks(i int) bool {
	return p.perLink[i] == perLinkLegacy || p.perLink[i] == perLinkBoth
}

// legacyLink decides what becomes of smp, a sample of one of 1040-1075 of devices[i] (err is its
// conversion's): keep false drops it. On a GPU reading both sources it settles the source as soon
// as a sample says which. Until then an invalid sample (the first GPM sample is always blank) is
// held back: passed on at once, it would move its series' baseline past the 1532/1533 samples of
// the same period, which come later in the poll. When a valid sample settles the source on
// 1040-1075, the held samples of the GPU go first, so that each series opens at its first sample,
// as the aggregate 1011/1012 does; otherwise they are dropped at the end of the poll.
func (s *dcgmSource) legacyLink(buf []sample, i int, smp sample, err error) ([]sample, bool) {
	switch s.plan.perLink[i] {
	case perLinkEntity, perLinkNone:
		// The history watch holds 1040-1075 for another GPU; this one's links are 1532/1533's.
		return buf, false
	case perLinkBoth:
		key := s.plan.devices[i].key()
		switch s.linkDecided[key] {
		case perLinkLegacy:
			return buf, true // proved itself earlier in this poll
		case perLinkEntity:
			return buf, false
		}
		switch {
		case err == nil:
			s.linkDecided[key] = perLinkLegacy
			s.replan = true // stop watching 1532/1533 for this GPU
			kept := s.heldLinks[:0]
			for _, h := range s.heldLinks {
				if h.gpu == i {
					buf = append(buf, h)
				} else {
					kept = append(kept, h)
				}
			}
			s.heldLinks = kept
			return buf, true
		case errors.Is(err, errNotSupported):
			s.linkDecided[key] = perLinkEntity
			s.replan = true
			return buf, false
		}
		// Blank, or refused: 1532/1533 carry the links meanwhile; settleLinks counts the poll.
		s.linkBlank[i] = true
		s.heldLinks = append(s.heldLinks, smp)
		return buf, false
	}
	return buf, true
}

// appendLinkSample converts one value of 1532/1533 read on a link entity into a per-link sample
// of the link's GPU, the link index in sample.entity, as the legacy fields' spec.link is.
func (s *dcgmSource) appendLinkSample(buf []sample, v dcgmValue) []sample {
	l, ok := parseDCGMLink(v.gpu)
	if !ok {
		return buf
	}
	i, ok := s.index[l.gpu]
	if !ok {
		return buf
	}
	spec, ok := dcgmLinkEntitySpecs[v.field]
	if !ok || !s.plan.reads[i].has(spec.q) {
		return buf
	}
	dev := s.plan.devices[i]
	switch s.plan.perLink[i] {
	case perLinkEntity:
	case perLinkBoth:
		if s.linkDecided[dev.key()] == perLinkLegacy {
			return buf // 1040-1075 carry this GPU's links now
		}
	default:
		return buf
	}
	smp, err := convertDCGM(v, spec)
	smp.gpu, smp.entity = i, uint32(l.index)
	// As for the legacy fields: one line per GPU and quantity, not one per link, and a blank is
	// passed on (it moves the series' baseline).
	if err != nil && !errors.Is(err, errBlank) {
		s.faults.notProvided(dev.name+"/"+spec.q.String(), err.Error())
		return buf
	}
	return append(buf, smp)
}

// settleLinks ends the wait of each GPU reading both sources whose 1040-1075 were blank in this
// poll: after gpmDecidePolls such polls, 1532/1533 are its source.
func (s *dcgmSource) settleLinks() {
	for i, blank := range s.linkBlank {
		if !blank {
			continue
		}
		s.linkBlank[i] = false
		key := s.plan.devices[i].key()
		if s.plan.perLink[i] != perLinkBoth || s.linkDecided[key] != perLinkNone {
			continue
		}
		s.linkBlankPolls[i]++
		if s.linkBlankPolls[i] >= gpmDecidePolls {
			s.linkDecided[key] = perLinkEntity
			s.replan = true
		}
	}
}

// pollLinks reads every sample of the link watch since the previous poll.
func (s *dcgmSource) pollLinks(buf []sample, nowUs int64) ([]sample, error) {
	vals, next, err := s.api.valuesSince(s.linkWatch, s.linkSince)
	if isValueCapError(err) {
		// As for the history watch: skip to one collection interval ago, said once.
		s.linkSince = max(s.linkSince, nowUs-s.cfg.CollectionInterval.Microseconds())
		s.lost = true
		s.faults.missing("nvlink-links", fmt.Errorf("%w: samples older than one collection interval skipped", err))
		vals, next, err = s.api.valuesSince(s.linkWatch, s.linkSince)
	}
	switch {
	case err == nil:
		s.faults.recover("nvlink-links")
		s.linkSince = max(s.linkSince, next)
		return s.appendSamples(buf, vals), nil
	case dcgmErrorCode(err) == dcgmStConnectionNotValid:
		return buf, sourceLost(err)
	case isValueCapError(err):
		s.linkSince = max(s.linkSince, nowUs)
	default:
		s.faults.fail("nvlink-links", err, len(s.plan.links)*len(dcgmLinkEntityFields))
	}
	return buf, nil
}

// watchNVLinkLinks watches 1532/1533 on the planned links at the fine sample interval. A failure
// costs the per-link bytes of the GPUs that have no other source, and is said once.
func (s *dcgmSource) watchNVLinkLinks() {
	p := s.plan
	if len(p.links) == 0 {
		return
	}
	keep := historyKeep(s.cfg, len(p.links), len(dcgmLinkEntityFields))
	w, err := s.api.watchLinks("iclens-nvlink-links", p.links, dcgmLinkEntityFields, s.cfg.DCGM.SampleInterval, keep)
	if err != nil {
		s.faults.missing("iclens-nvlink-links", fmt.Errorf("per-link NVLink bytes from DCGM fields 1532/1533 missing: %w", err))
		return
	}
	s.faults.recover("iclens-nvlink-links")
	s.linkWatch, s.hasLinks = w, true
	s.keep = min(s.keep, keep) // the lost-history check must hold for the shorter-lived watch
}

// describePerLink names where a GPU's per-link bytes come from, for the source line.
func describePerLink(from perLinkFrom) string {
	switch from {
	case perLinkLegacy:
		return "rate DCGM fields 1040-1075 (bytes/s, integrated)"
	case perLinkEntity:
		return "rate DCGM fields 1532/1533 on DCGM_FE_LINK entities (bytes/s assumed, integrated)"
	case perLinkBoth:
		return "rate DCGM fields 1040-1075, 1532/1533 on DCGM_FE_LINK entities until 1040-1075 give a value"
	}
	return "none (not supported by DCGM on this GPU)"
}

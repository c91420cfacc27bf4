package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/internal/pci"
)

// dcgmPlan is what discovery decided: which GPUs, and which quantities of each are read from which field.
type dcgmPlan struct {
	ids     []uint
	devices []gpuDevice
	// reads[i] is the set of quantities read for devices[i].
	reads []quantitySet
	// history and latest are the fields of the two watches (union over the GPUs).
	history []uint16
	latest  []uint16
	// mig are the MIG instances of the planned GPUs, watched for XIDs: under MIG, DCGM records an
	// XID raised inside a GPU or compute instance on that instance's entity only, not on the GPU
	// (DcgmCacheManager.cpp, nvmlEventTypeXidCriticalError: RecordXidForComputeInstance /
	// RecordXidForGpuInstance unless both instance ids are blank).
	mig []dcgmEntity
	// group is the metric group of each profiling field, majorId<<16 | minorId
	// (dcgmProfMetricGroupInfo_v2): on GPUs before Hopper, groups of one major id with different
	// minor ids cannot be watched at once.
	group map[uint16]uint32
	// perLink[i] is where devices[i]'s per-link NVLink bytes come from; links are the NVLink links
	// watched as DCGM_FE_LINK entities for 1532/1533 (dcgm_links.go).
	perLink []perLinkFrom
	links   []dcgmLink
}

func (p *dcgmPlan) equal(o *dcgmPlan) bool {
	return o != nil && slices.Equal(p.ids, o.ids) && slices.Equal(p.reads, o.reads) &&
		slices.Equal(p.history, o.history) && slices.Equal(p.latest, o.latest) && slices.Equal(p.mig, o.mig) &&
		slices.Equal(p.perLink, o.perLink) && slices.Equal(p.links, o.links) &&
		slices.EqualFunc(p.devices, o.devices, func(a, b gpuDevice) bool { return a == b })
}

// historyKeep is how long DCGM keeps the samples of the history watch: three collection
// intervals (at least 30 s) for a late scrape, but no more than half of go-dcgm's value cap can
// hold, so that a poll after a late scrape (or the first poll, from 0) still fits in one call.
func historyKeep(cfg *Config, gpus, fields int) time.Duration {
	keep := max(3*cfg.CollectionInterval, 30*time.Second)
	if gpus == 0 || fields == 0 {
		return keep
	}
	fit := time.Duration(goDCGMValueCap/2/(gpus*fields)) * cfg.DCGM.SampleInterval
	return max(min(keep, fit), cfg.DCGM.SampleInterval)
}

// refresh discovers the GPUs and what each supports, and re-creates the watches if that changed.
func (s *dcgmSource) refresh() error {
	plan, err := s.discover()
	if err != nil {
		return err
	}
	if plan.equal(s.plan) {
		return nil
	}
	s.unwatchAll()
	s.plan = plan
	s.failing = make([]quantitySet, len(plan.ids))
	s.blankPolls = make([]int, len(plan.ids))
	s.linkBlank, s.linkBlankPolls = make([]bool, len(plan.ids)), make([]int, len(plan.ids))
	s.index = make(map[uint]int, len(plan.ids))
	for i, id := range plan.ids {
		s.index[id] = i
	}
	// The history cursor is kept across re-watches; starting from 0 asks DCGM for everything it
	// still holds, so the first scrape integrates from the first sample DCGM took.
	if err := s.watchAll(); err != nil {
		// Forget the plan so that the next refresh sets the watches up again.
		s.unwatchAll()
		s.plan = nil
		return err
	}
	return nil
}

// discover builds a plan from what DCGM says now.
func (s *dcgmSource) discover() (*dcgmPlan, error) {
	ids, err := s.api.supportedGPUs()
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, errors.New("DCGM is running but supports no GPU on this node")
	}
	slices.Sort(ids)
	plan := &dcgmPlan{ids: ids, devices: make([]gpuDevice, len(ids))}
	s.identify(plan)
	// Drop the GPUs the configuration excludes before anything is watched.
	kept := 0
	for i := range plan.ids {
		if s.cfg.selects(plan.devices[i]) {
			plan.ids[kept], plan.devices[kept] = plan.ids[i], plan.devices[i]
			kept++
		}
	}
	plan.ids, plan.devices = plan.ids[:kept], plan.devices[:kept]
	if kept == 0 {
		return nil, errors.New("no GPU left after include / exclude")
	}
	ids = plan.ids
	plan.reads = make([]quantitySet, len(ids))
	plan.perLink = make([]perLinkFrom, len(ids))
	plan.group = map[uint16]uint32{}
	// The GPUs' NVLink links, asked of DCGM at most once per discovery, and only for 1532/1533.
	var linkStatus map[uint][]uint16
	var linkErr error
	asked := false
	links := func() (map[uint][]uint16, error) {
		if !asked {
			asked = true
			linkStatus, linkErr = s.api.nvlinkLinks()
		}
		return linkStatus, linkErr
	}

	// Counters that are not profiling fields (NVLink5 byte totals, link health) are probed with one
	// live read (dcgmFieldSpec.probed).
	probe := map[uint]map[uint16]bool{}
	var probeFields []uint16
	for _, f := range dcgmFieldSpecs {
		if f.probed() && s.want.has(f.q) {
			probeFields = append(probeFields, f.id)
		}
	}
	// DCGM 4.6 lists the C2C fields on every GPM GPU (DcgmModuleCore.cpp
	// ProcessProfGetMetricGroups); only a GPU whose C2C link count (DCGM_FI_DEV_C2C_LINK_QUANTITY)
	// is not 0 has a C2C link to report.
	noC2C := map[uint]bool{}
	if s.want.has(qC2CTxRate) || s.want.has(qC2CRxRate) {
		probeFields = append(probeFields, dcgmFieldC2CLinkCount)
	}
	if len(probeFields) > 0 {
		vals, err := s.api.latestValues(ids, probeFields, true)
		if err == nil {
			for _, v := range vals {
				if v.field == dcgmFieldC2CLinkCount {
					if v.status == dcgmStOK && v.fieldType == dcgmTypeInt64 && (v.i == 0 || v.i == dcgmInt64NotSupported) {
						noC2C[v.gpu] = true
					}
					continue
				}
				if _, err := convertDCGM(v, dcgmSpecByID[v.field]); err == nil {
					if i := slices.Index(ids, v.gpu); i >= 0 {
						key := plan.devices[i].key()
						p := s.proven[key]
						p.add(dcgmSpecByID[v.field].q)
						s.proven[key] = p
					}
					if probe[v.gpu] == nil {
						probe[v.gpu] = map[uint16]bool{}
					}
					probe[v.gpu][v.field] = true
				}
			}
		}
	}

	for i, id := range ids {
		dev := plan.devices[i]
		prof, groups, profErr := s.api.profilingFields(id)
		for f, g := range groups {
			plan.group[f] = g
		}
		supported := map[uint16]bool{}
		for _, f := range prof {
			supported[f] = true
		}
		var missing []string
		var reads quantitySet
		for _, f := range dcgmFieldSpecs {
			if !s.want.has(f.q) {
				continue
			}
			switch {
			case f.isProfiling() && profErr != nil:
				// A missing counter falls back to its rate silently; per-link rates are opt-in
				// detail of the NVLink aggregate, said missing with it.
				if !f.q.isCounter() && !f.q.isPerLink() {
					missing = append(missing, f.q.String())
				}
				continue
			case f.isProfiling() && !supported[f.id]:
				// A link the GPU lacks is not missing: its peers carry the quantity.
				if !f.q.isCounter() && !f.q.isPerLink() {
					missing = append(missing, f.q.String())
				}
				continue
			case f.probed() && !probe[id][f.id]:
				continue
			case (f.q == qC2CTxRate || f.q == qC2CRxRate) && noC2C[id]:
				continue // no C2C link: nothing missing
			}
			reads.add(f.q)
		}
		// Where a link's cumulative counter has produced a value, its rate is not read: one
		// series, one origin. A counter DCGM lists but that has not produced a value yet (GPM
		// fields are blank until two GPM samples exist, and DCGM 4.6 lists 1091/1092 even where
		// the driver's NVML has no GPM PCIe counter) is read next to the rate, which carries the
		// link until the counter proves itself.
		for q := qPCIeTxRate; q <= qC2CRxRate; q++ {
			if c, ok := counterFor(q); ok && reads.has(c) {
				if s.proven[dev.key()].has(c) {
					reads &^= 1 << q
				}
				missing = slices.DeleteFunc(missing, func(m string) bool { return m == q.String() })
			}
		}
		reads &^= s.unsupported[dev.key()]
		var mine []dcgmLink
		plan.perLink[i], mine = s.planPerLink(dev, supported, profErr, &reads, links)
		plan.links = append(plan.links, mine...)
		plan.reads[i] = reads
		key := dev.name + "/profiling"
		switch {
		case len(missing) == 0:
			s.faults.recover(key)
		case profErr != nil:
			s.faults.missing(key, fmt.Errorf("%s missing: %w", strings.Join(missing, ", "), profErr))
		default:
			s.faults.missing(key, fmt.Errorf("%s missing: not among the profiling metrics DCGM supports on this GPU (%s)", strings.Join(missing, ", "), dev.model))
		}
	}

	if s.want.has(qXID) {
		if ents, err := s.api.migEntities(); err == nil {
			for _, e := range ents {
				if (e.group == dcgmFEGPUI || e.group == dcgmFEGPUCI) && slices.Contains(ids, e.gpu) {
					plan.mig = append(plan.mig, e)
				}
			}
		}
	}

	for _, f := range dcgmFieldSpecs {
		used := false
		for i, r := range plan.reads {
			// 1040-1075 only for the GPUs whose links they carry (not those on 1532/1533 alone).
			used = used || r.has(f.q) && (!f.q.isLinkRate() || plan.readsLegacyLinks(i))
		}
		if !used {
			continue
		}
		if f.history {
			plan.history = append(plan.history, f.id)
		} else {
			plan.latest = append(plan.latest, f.id)
		}
	}
	return plan, nil
}

// identify fills in each GPU's identity with one live read of name, UUID and PCI bus id: much
// lighter than go-dcgm's GetDeviceInfo, which creates and destroys groups and watches per GPU.
func (s *dcgmSource) identify(plan *dcgmPlan) {
	for i, id := range plan.ids {
		plan.devices[i] = gpuDevice{id: id, name: "gpu" + strconv.FormatUint(uint64(id), 10), numaNode: -1}
	}
	vals, err := s.api.latestValues(plan.ids, []uint16{dcgmFieldGPUName, dcgmFieldGPUUUID, dcgmFieldPCIBusID}, true)
	if err != nil {
		s.faults.missing("identity", err)
		return
	}
	s.faults.recover("identity")
	pos := make(map[uint]int, len(plan.ids))
	for i, id := range plan.ids {
		pos[id] = i
	}
	for _, v := range vals {
		i, ok := pos[v.gpu]
		if !ok || v.status != dcgmStOK || v.fieldType != dcgmTypeString || strings.HasPrefix(v.s, dcgmStrBlankPrefix) {
			continue
		}
		d := &plan.devices[i]
		switch v.field {
		case dcgmFieldGPUName:
			d.model = v.s
		case dcgmFieldGPUUUID:
			d.uuid = v.s
		case dcgmFieldPCIBusID:
			d.busID = pci.NormaliseAddress(v.s)
			if d.busID != "" && s.numaNode != nil {
				d.numaNode = s.numaNode(d.busID)
			}
		}
	}
}

// watchAll creates the two watches: rates and XIDs at the fine sample interval with enough history
// kept for a late scrape, everything else at the collection interval.
func (s *dcgmSource) watchAll() error {
	p := s.plan
	keep := historyKeep(s.cfg, len(p.ids), len(p.history))
	s.keep = keep
	var err error
	s.history, s.hasHistory, err = s.watchFields("iclens-history", &p.history, s.cfg.DCGM.SampleInterval, keep, 0)
	if err != nil {
		return err
	}
	s.latest, s.hasLatest, err = s.watchFields("iclens-latest", &p.latest, s.cfg.CollectionInterval, max(3*s.cfg.CollectionInterval, 30*time.Second), 2)
	if err != nil {
		return err
	}
	s.watchNVLinkLinks()
	if len(p.mig) == 0 || !s.want.has(qXID) {
		return nil
	}
	s.migParent = make(map[[2]uint]uint, len(p.mig))
	for _, e := range p.mig {
		s.migParent[[2]uint{uint(e.group), e.id}] = e.gpu
	}
	w, merr := s.api.watchMIG("iclens-mig-xid", p.mig, []uint16{dcgmFieldXID}, s.cfg.DCGM.SampleInterval, keep)
	if merr != nil {
		s.faults.missing("iclens-mig-xid", fmt.Errorf("XIDs of MIG instances missing: %w", merr))
		return nil
	}
	s.faults.recover("iclens-mig-xid")
	s.migXID, s.hasMIG = w, true
	return nil
}

// watchFields watches *fields. A watch of profiling fields can fail as a whole (the counters are
// held by Nsight or CUPTI, or the fields need several passes on this GPU: DCGM_ST_PROFILING_MULTI_PASS,
// as groups with the same major id cannot be watched concurrently before Hopper, DCGM API
// documentation of dcgmProfGetSupportedMetricGroups). Then the profiling fields are added back one
// metric group (major and minor id) at a time, each kept if the watch still succeeds: only the groups that
// conflict are lost, and the operator is told which series and why. With one group only, the
// watch has already failed with it. Rediscovery tries the full
// set again.
func (s *dcgmSource) watchFields(name string, fields *[]uint16, every, keep time.Duration, keepSamples int32) (dcgmWatchID, bool, error) {
	if len(*fields) == 0 {
		return 0, false, nil
	}
	w, err := s.api.watch(name, s.plan.ids, *fields, every, keep, keepSamples)
	if err == nil {
		s.faults.recover(name)
		return w, true, nil
	}
	var kept []uint16
	var order []uint32
	groups := map[uint32][]uint16{}
	for _, id := range *fields {
		if !dcgmSpecByID[id].isProfiling() {
			kept = append(kept, id)
			continue
		}
		g := s.plan.group[id]
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], id)
	}
	if len(order) == 0 {
		return 0, false, err
	}
	slices.Sort(order) // lower (major, minor) first: the same groups win at every rediscovery
	var lostFields []uint16
	firstErr := err
	for _, g := range order {
		try := append(slices.Clone(kept), groups[g]...)
		if len(order) > 1 {
			tw, terr := s.api.watch(name, s.plan.ids, try, every, keep, keepSamples)
			if terr == nil {
				_ = s.api.unwatch(tw)
				kept = try
				continue
			}
		}
		lostFields = append(lostFields, groups[g]...)
	}
	var lost []string
	for _, id := range lostFields {
		lost = append(lost, dcgmSpecByID[id].q.String())
	}
	s.faults.missing(name, fmt.Errorf("%s missing on every GPU: %w", strings.Join(lost, ", "), firstErr))
	*fields = kept
	for i := range s.plan.reads {
		for _, id := range lostFields {
			s.plan.reads[i] &^= 1 << dcgmSpecByID[id].q
		}
	}
	if len(*fields) == 0 {
		return 0, false, nil
	}
	w, err = s.api.watch(name, s.plan.ids, *fields, every, keep, keepSamples)
	return w, err == nil, err
}

func (s *dcgmSource) unwatchAll() {
	if s.hasHistory {
		_ = s.api.unwatch(s.history)
		s.hasHistory = false
	}
	if s.hasLatest {
		_ = s.api.unwatch(s.latest)
		s.hasLatest = false
	}
	if s.hasMIG {
		_ = s.api.unwatch(s.migXID)
		s.hasMIG = false
	}
	if s.hasLinks {
		_ = s.api.unwatch(s.linkWatch)
		s.hasLinks = false
	}
}

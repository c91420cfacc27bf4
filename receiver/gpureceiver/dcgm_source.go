package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/internal/pci"
)

// dcgmValue is one DCGM field value in plain Go types: the part of go-dcgm's FieldValue_v2
// (pkg/dcgm/const.go) the receiver needs, copied out of the 4 KiB C union so that the scrape
// logic can be tested without cgo.
type dcgmValue struct {
	// gpu is the entity id: a GPU id, or for entity dcgmFEGPUI / dcgmFEGPUCI a MIG instance's.
	gpu uint
	// entity is the entity group (dcgm_field_entity_group_t); 0 or dcgmFEGPU for a GPU.
	entity    int
	field     uint16
	fieldType byte // 'i', 'd', 's' (DCGM_FT_*)
	status    int  // per-value dcgmReturn_t
	ts        int64
	i         int64
	f         float64
	s         string
}

// dcgmError is a DCGM failure with its dcgmReturn_t code where go-dcgm kept one (0 where it did not).
type dcgmError struct {
	op   string
	code int
	msg  string
}

func (e *dcgmError) Error() string {
	if e.code != 0 {
		return fmt.Sprintf("%s: %s (%s)", e.op, e.msg, dcgmStatusReason(e.code))
	}
	return e.op + ": " + e.msg
}

func dcgmErrorCode(err error) int {
	var de *dcgmError
	if errors.As(err, &de) {
		return de.code
	}
	return 0
}

// dcgmWatchID names a watch (a GPU group and a field group watched together).
type dcgmWatchID int

// dcgmAPI is the part of go-dcgm the receiver calls, in plain Go types. dcgm_cgo.go implements it
// over go-dcgm (and so over libdcgm.so.4); tests implement it in Go. Every method but connect must
// only be called after connect succeeded: go-dcgm resolves libdcgm's symbols lazily, and a call
// after a failed Init kills the process with a symbol lookup error.
type dcgmAPI interface {
	// connect loads libdcgm.so.4 and connects (dcgm.Init).
	connect(cfg DCGMConfig) error
	// supportedGPUs lists the GPU ids DCGM supports (dcgmGetAllSupportedDevices).
	supportedGPUs() ([]uint, error)
	// latestValues reads the newest value of each field of each GPU (dcgmEntitiesGetLatestValues);
	// live asks DCGM to read the driver instead of its cache, for fields that are not watched.
	latestValues(gpus []uint, fields []uint16, live bool) ([]dcgmValue, error)
	// profilingFields lists the profiling fields the GPU supports (dcgmProfGetSupportedMetricGroups)
	// and, for each, its metric group as majorId<<16 | minorId.
	profilingFields(gpu uint) ([]uint16, map[uint16]uint32, error)
	// watch creates a group of the GPUs and a field group and watches them
	// (dcgmGroupCreate, dcgmGroupAddDevice, dcgmFieldGroupCreate, dcgmWatchFields, dcgmUpdateAllFields).
	watch(name string, gpus []uint, fields []uint16, updateEvery time.Duration, keepAge time.Duration, keepSamples int32) (dcgmWatchID, error)
	// valuesSince returns every sample of the watch newer than sinceUs and the timestamp to ask
	// from next time (dcgmGetValuesSince_v2).
	valuesSince(w dcgmWatchID, sinceUs int64) ([]dcgmValue, int64, error)
	// migEntities lists the MIG GPU and compute instances with the GPU each belongs to
	// (dcgmGetGpuInstanceHierarchy).
	migEntities() ([]dcgmEntity, error)
	// watchMIG watches fields on MIG instances (dcgmGroupCreate, dcgmGroupAddEntity, then as watch).
	watchMIG(name string, entities []dcgmEntity, fields []uint16, updateEvery, keepAge time.Duration) (dcgmWatchID, error)
	// unwatch stops the watch and destroys its groups.
	unwatch(w dcgmWatchID) error
	// disconnect undoes connect (dcgm.Shutdown).
	disconnect() error
}

// dcgmEntity is a MIG instance: its entity group and id, and the DCGM id of its GPU.
type dcgmEntity struct {
	group int
	id    uint
	gpu   uint
}

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
}

func (p *dcgmPlan) equal(o *dcgmPlan) bool {
	return o != nil && slices.Equal(p.ids, o.ids) && slices.Equal(p.reads, o.reads) &&
		slices.Equal(p.history, o.history) && slices.Equal(p.latest, o.latest) && slices.Equal(p.mig, o.mig) &&
		slices.EqualFunc(p.devices, o.devices, func(a, b gpuDevice) bool { return a == b })
}

// dcgmSource reads GPUs through DCGM.
type dcgmSource struct {
	api    dcgmAPI
	cfg    *Config
	logger *zap.Logger
	// want is what the enabled metrics need; nothing else is watched.
	want quantitySet
	// faults says each missing series and failing call once, and returns the failures of a poll.
	faults *faults
	// numaNode resolves a PCI address to its NUMA node (sysfs under root_path).
	numaNode func(busID string) int64

	plan    *dcgmPlan
	index   map[uint]int // DCGM gpu id -> index in plan.devices
	history dcgmWatchID
	latest  dcgmWatchID
	migXID  dcgmWatchID
	// hasHistory/hasLatest/hasMIG: whether the watch exists.
	hasHistory, hasLatest, hasMIG bool
	// since is the GetValuesSince cursor of the history watch, in µs; migSince the MIG watch's.
	since, migSince int64
	// migParent maps a MIG instance (group, id) to its GPU's DCGM id.
	migParent map[[2]uint]uint
	// failing[i] holds the quantities of devices[i] whose last value was refused with a reason.
	failing []quantitySet
	// unsupported holds, per GPU UUID (or name), the quantities DCGM answered NOT_SUPPORTED for:
	// they leave the plan (said once) and are not watched again, even after rediscovery.
	unsupported map[string]quantitySet

	// proven holds, per GPU UUID (or name), the cumulative counters that have produced a valid
	// value. DCGM 4.6 lists the GPM counters 1091/1092 (and the C2C and NVLink ranges) on every
	// GPM GPU whatever the driver supports (DcgmModuleCore::ProcessProfGetMetricGroups), and a GPM
	// value is blank until two GPM samples exist: until a counter has proven itself, its link's
	// rate is read too. It survives rediscovery and reconnection.
	proven map[string]quantitySet
	// blankPolls counts, per GPU index, the polls since the watch in which an unproven counter
	// was read but blank; after gpmDecidePolls the rate is taken as the link's source.
	blankPolls []int
	// sources is the per-GPU description of where each link's bytes come from, as last logged.
	sources map[string]string

	// lastPoll is when the history was last read; keep is how long DCGM keeps it.
	lastPoll time.Time
	keep     time.Duration
	// replan: a field answered NOT_SUPPORTED in this poll; the plan drops it.
	replan bool
	// lost says that samples were lost before the next ones (history expired, or skipped past
	// go-dcgm's value cap): the integrators must not charge the gap to the next sample.
	lost bool
}

// goDCGMValueCap is go-dcgm's limit on the values one GetValuesSince may return
// (pkg/dcgm/field_values.go maxCallbackValues = DCGM_GROUP_MAX_ENTITIES_V2 * 128): beyond it the
// whole call fails with "field value limit exceeded" and returns nothing.
const goDCGMValueCap = 131072

// isValueCapError reports whether err is go-dcgm refusing a GetValuesSince over its value cap.
func isValueCapError(err error) bool {
	return err != nil && strings.Contains(err.Error(), "field value limit exceeded")
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

// historyLost reports, once, that samples were lost since the previous poll.
func (s *dcgmSource) historyLost() bool {
	l := s.lost
	s.lost = false
	return l
}

// gpmDecidePolls is how many polls an unproven counter may stay blank before its rate is named
// the link's source: a GPM value needs two GPM samples (the first is blank, DCGM test_prof.py),
// taken at the collection interval of the latest-values watch.
const gpmDecidePolls = 3

// dcgmSpecByID maps a field id to its spec.
var dcgmSpecByID = func() map[uint16]dcgmFieldSpec {
	m := make(map[uint16]dcgmFieldSpec, len(dcgmFieldSpecs))
	for _, f := range dcgmFieldSpecs {
		m[f.id] = f
	}
	return m
}()

// dcgmFieldOf returns the DCGM field that carries quantity q.
func dcgmFieldOf(q quantity) dcgmFieldSpec {
	for _, f := range dcgmFieldSpecs {
		if f.q == q {
			return f
		}
	}
	panic("no DCGM field for " + q.String())
}

// openDCGM connects to DCGM and sets up the watches. On error nothing is left connected.
func openDCGM(api dcgmAPI, cfg *Config, logger *zap.Logger, want quantitySet, numaNode func(string) int64) (*dcgmSource, error) {
	if err := api.connect(cfg.DCGM); err != nil {
		return nil, err
	}
	s := &dcgmSource{api: api, cfg: cfg, logger: logger, want: want, faults: newFaults(logger), numaNode: numaNode,
		proven: map[string]quantitySet{}, unsupported: map[string]quantitySet{}, sources: map[string]string{}}
	if err := s.refresh(); err != nil {
		_ = s.close()
		return nil, err
	}
	return s, nil
}

func (s *dcgmSource) kind() string { return "dcgm" }

func (s *dcgmSource) devices() []gpuDevice {
	if s.plan == nil {
		return nil
	}
	return s.plan.devices
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
	plan.group = map[uint16]uint32{}

	// Counters that are not profiling fields (NVLink5 byte totals) are probed with one live read.
	probe := map[uint]map[uint16]bool{}
	var probeFields []uint16
	for _, f := range dcgmFieldSpecs {
		if f.q.isCounter() && f.q != qPCIeReplays && !f.isProfiling() && s.want.has(f.q) {
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
				if !f.q.isCounter() { // a missing counter falls back to its rate silently
					missing = append(missing, f.q.String())
				}
				continue
			case f.isProfiling() && !supported[f.id]:
				if !f.q.isCounter() {
					missing = append(missing, f.q.String())
				}
				continue
			case f.q.isCounter() && !f.isProfiling() && f.q != qPCIeReplays && !probe[id][f.id]:
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
		for _, r := range plan.reads {
			used = used || r.has(f.q)
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
	if err != nil || len(p.mig) == 0 || !s.want.has(qXID) {
		return err
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
}

// poll reads every history sample since the previous poll and the latest value of every other field.
func (s *dcgmSource) poll(now time.Time, buf []sample) ([]sample, error) {
	if s.plan == nil {
		return buf, nil
	}
	gpus := len(s.plan.ids)
	if s.hasHistory {
		if !s.lastPoll.IsZero() && now.Sub(s.lastPoll) > s.keep {
			// DCGM dropped what is older than keep: the gap up to the first sample is not the
			// period that sample averages.
			s.lost = true
		}
		s.lastPoll = now
		vals, next, err := s.api.valuesSince(s.history, s.since)
		if isValueCapError(err) {
			// The cursor would never move again: the next call asks for even more. Skip to one
			// collection interval before now and ask again; what lies before is lost, and said once.
			s.since = max(s.since, now.Add(-s.cfg.CollectionInterval).UnixMicro())
			s.lost = true
			s.faults.missing("history", fmt.Errorf("%w: samples older than one collection interval skipped", err))
			vals, next, err = s.api.valuesSince(s.history, s.since)
		}
		switch {
		case err == nil:
			s.faults.recover("history")
			if next > s.since {
				s.since = next
			}
			buf = s.appendSamples(buf, vals)
		case dcgmErrorCode(err) == dcgmStConnectionNotValid:
			return buf, sourceLost(err)
		case isValueCapError(err):
			// Even one collection interval is over the cap: start from now next time.
			s.since = max(s.since, now.UnixMicro())
		default:
			s.faults.fail("history", err, gpus*len(s.plan.history))
		}
	}
	if s.hasMIG {
		vals, next, err := s.api.valuesSince(s.migXID, s.migSince)
		switch {
		case err == nil:
			s.faults.recover("mig-xid")
			s.migSince = max(s.migSince, next)
			buf = s.appendSamples(buf, vals)
		case dcgmErrorCode(err) == dcgmStConnectionNotValid:
			return buf, sourceLost(err)
		default:
			s.faults.fail("mig-xid", err, gpus)
		}
	}
	if s.hasLatest {
		vals, err := s.api.latestValues(s.plan.ids, s.plan.latest, false)
		switch {
		case err == nil:
			s.faults.recover("latest")
			buf = s.appendSamples(buf, vals)
		case dcgmErrorCode(err) == dcgmStConnectionNotValid:
			return buf, sourceLost(err)
		default:
			s.faults.fail("latest", err, gpus*len(s.plan.latest))
		}
	}
	if s.settleSources(buf) || s.replan {
		// A counter proved itself (watch it alone, without the rate it replaces), or a field
		// turned out unsupported (stop watching it).
		s.replan = false
		if err := s.refresh(); err != nil {
			s.faults.missing("refresh", err)
		}
	}
	return buf, s.faults.take()
}

// settleSources records which counters produced a valid value in this poll, logs once per GPU
// where each link's bytes come from as soon as that is decided, and reports whether a counter
// newly proved itself (so the plan can drop its rate).
func (s *dcgmSource) settleSources(buf []sample) bool {
	var valid = make([]quantitySet, len(s.plan.devices))
	for _, smp := range buf {
		if smp.valid && smp.q.isCounter() && smp.gpu >= 0 && smp.gpu < len(valid) {
			valid[smp.gpu].add(smp.q)
		}
	}
	changed := false
	for i, dev := range s.plan.devices {
		key := dev.key()
		reads := s.plan.reads[i]
		undecided := false
		for q := qPCIeTxRate; q <= qC2CRxRate; q++ {
			c, ok := counterFor(q)
			if !ok || !reads.has(c) || s.proven[key].has(c) {
				continue
			}
			if valid[i].has(c) {
				p := s.proven[key]
				p.add(c)
				s.proven[key] = p
				changed = true
				continue
			}
			undecided = true
		}
		if undecided {
			s.blankPolls[i]++
			if s.blankPolls[i] < gpmDecidePolls {
				continue
			}
		}
		desc := describeSources(reads, s.proven[key])
		if s.sources[key] != desc {
			s.sources[key] = desc
			fields := []zap.Field{zap.String("device", dev.name), zap.String("gpu.uuid", dev.uuid)}
			for _, l := range strings.Split(desc, "; ") {
				name, what, _ := strings.Cut(l, ": ")
				fields = append(fields, zap.String(name, what))
			}
			s.logger.Info("GPU interconnect bytes: source per quantity", fields...)
		}
	}
	return changed
}

// describeSources names, per link quantity, the DCGM field its bytes come from.
func describeSources(reads, proven quantitySet) string {
	var parts []string
	for _, l := range []struct {
		name     string
		tx, rx   quantity
		ctr      bool
		txC, rxC quantity
	}{
		{"gpu_pcie", qPCIeTxRate, qPCIeRxRate, true, qPCIeTxBytes, qPCIeRxBytes},
		{"gpu_nvlink", qNVLinkTxRate, qNVLinkRxRate, true, qNVLinkTxBytes, qNVLinkRxBytes},
		{"gpu_c2c", qC2CTxRate, qC2CRxRate, false, 0, 0},
	} {
		var what string
		switch {
		case l.ctr && reads.has(l.txC) && !reads.has(l.tx) || l.ctr && proven.has(l.txC):
			what = fmt.Sprintf("counter DCGM fields %d/%d (cumulative bytes)", dcgmFieldOf(l.txC).id, dcgmFieldOf(l.rxC).id)
		case reads.has(l.tx):
			what = fmt.Sprintf("rate DCGM fields %d/%d (bytes/s, integrated)", dcgmFieldOf(l.tx).id, dcgmFieldOf(l.rx).id)
		default:
			what = "none (not supported by DCGM on this GPU)"
		}
		parts = append(parts, l.name+": "+what)
	}
	return strings.Join(parts, "; ")
}

// appendSamples converts DCGM values into samples, dropping those of GPUs and fields not planned.
func (s *dcgmSource) appendSamples(buf []sample, vals []dcgmValue) []sample {
	for _, v := range vals {
		gpu, entity := v.gpu, uint32(0)
		if v.entity == dcgmFEGPUI || v.entity == dcgmFEGPUCI {
			// An XID of a MIG instance counts for its GPU, told apart from the GPU's own.
			parent, ok := s.migParent[[2]uint{uint(v.entity), v.gpu}]
			if !ok || v.field != dcgmFieldXID {
				continue
			}
			gpu, entity = parent, uint32(v.entity)<<24|uint32(v.gpu)&0xffffff
		}
		i, ok := s.index[gpu]
		if !ok {
			continue
		}
		spec, ok := dcgmSpecByID[v.field]
		if !ok || !s.plan.reads[i].has(spec.q) {
			continue
		}
		smp, err := convertDCGM(v, spec)
		smp.gpu, smp.entity = i, entity
		// The series name is built only when there is something to say: this loop runs for
		// every sample of every GPU.
		dev := s.plan.devices[i]
		switch {
		case err == nil && s.failing[i].has(spec.q):
			s.failing[i] &^= 1 << spec.q
			s.faults.recover(dev.name + "/" + spec.q.String())
		case err == nil, errors.Is(err, errBlank):
		case errors.Is(err, errNotSupported):
			// Not an error: the GPU does not have it. It leaves the plan at the end of the poll.
			u := s.unsupported[dev.key()]
			u.add(spec.q)
			s.unsupported[dev.key()] = u
			s.replan = true
			s.faults.notProvided(dev.name+"/"+spec.q.String(), err.Error())
			continue
		case v.status == dcgmStGPUIsLost:
			// One message for the GPU, not one per field.
			s.failing[i].add(spec.q)
			s.faults.fail(dev.name, err, 1)
		default:
			s.failing[i].add(spec.q)
			s.faults.fail(dev.name+"/"+spec.q.String(), err, 1)
		}
		buf = append(buf, smp)
	}
	return buf
}

func (s *dcgmSource) close() error {
	s.unwatchAll()
	return s.api.disconnect()
}

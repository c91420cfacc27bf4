package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"
)

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
	// linkWatch watches 1532/1533 on NVLink link entities (dcgm_links.go).
	linkWatch dcgmWatchID
	// hasHistory/hasLatest/hasMIG/hasLinks: whether the watch exists.
	hasHistory, hasLatest, hasMIG, hasLinks bool
	// since is the GetValuesSince cursor of the history watch, in µs; migSince the MIG watch's,
	// linkSince the link watch's.
	since, migSince, linkSince int64
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
	// linkDecided holds, per GPU UUID (or name), the per-link NVLink source settled on a GPU that
	// lists both 1040-1075 and 1532/1533 (perLinkLegacy or perLinkEntity; dcgm_links.go). It
	// survives rediscovery and reconnection. linkBlank[i] says that devices[i]'s 1040-1075 were
	// blank in this poll, linkBlankPolls[i] in how many polls so far; heldLinks are this poll's
	// invalid samples of 1040-1075 on such GPUs, held back until the source is settled.
	linkDecided    map[string]perLinkFrom
	linkBlank      []bool
	linkBlankPolls []int
	heldLinks      []sample

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

// openDCGM connects to DCGM and sets up the watches. On error nothing is left connected.
func openDCGM(api dcgmAPI, cfg *Config, logger *zap.Logger, want quantitySet, numaNode func(string) int64) (*dcgmSource, error) {
	if err := api.connect(cfg.DCGM); err != nil {
		return nil, err
	}
	s := &dcgmSource{api: api, cfg: cfg, logger: logger, want: want, faults: newFaults(logger), numaNode: numaNode,
		proven: map[string]quantitySet{}, unsupported: map[string]quantitySet{}, sources: map[string]string{},
		linkDecided: map[string]perLinkFrom{}}
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

// poll reads every history sample since the previous poll and the latest value of every other field.
func (s *dcgmSource) poll(now time.Time, buf []sample) ([]sample, error) {
	if s.plan == nil {
		return buf, nil
	}
	gpus := len(s.plan.ids)
	s.heldLinks = s.heldLinks[:0] // held back within one poll only (legacyLink)
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
	if s.hasLinks {
		var err error
		if buf, err = s.pollLinks(buf, now.UnixMicro()); err != nil {
			return buf, err
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
	s.settleLinks()
	if s.settleSources(buf) || s.replan {
		// A counter proved itself (watch it alone, without the rate it replaces), a field
		// turned out unsupported (stop watching it), or a GPU's per-link source was settled.
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
		if s.plan.perLink[i] == perLinkBoth && s.linkDecided[key] == perLinkNone {
			undecided = true // the per-link source is not settled yet
		}
		if undecided {
			s.blankPolls[i]++
			if s.blankPolls[i] < gpmDecidePolls {
				continue
			}
		}
		perLink := s.plan.perLink[i]
		if d := s.linkDecided[key]; perLink == perLinkBoth && d != perLinkNone {
			perLink = d // settled in this poll; the plan follows at the replan
		}
		desc := describeSources(reads, s.proven[key], perLink)
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

// describeSources names, per link quantity, the DCGM field its bytes come from, and with the opt-in
// per-link bytes, where those come from.
func describeSources(reads, proven quantitySet, perLink perLinkFrom) string {
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
	if reads.has(qNVLinkLinkTxRate) || reads.has(qNVLinkLinkRxRate) {
		parts = append(parts, "gpu_nvlink_link: "+describePerLink(perLink))
	}
	return strings.Join(parts, "; ")
}

// appendSamples converts DCGM values into samples, dropping those of GPUs and fields not planned.
func (s *dcgmSource) appendSamples(buf []sample, vals []dcgmValue) []sample {
	for _, v := range vals {
		if v.entity == dcgmFELink {
			buf = s.appendLinkSample(buf, v)
			continue
		}
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
		if spec.q.isPerLink() || spec.q.isHealthKind() {
			smp.entity = spec.link
			if spec.q.isHealthKind() {
				smp.entity = spec.kind
			}
			if spec.q.isLinkRate() {
				var keep bool
				if buf, keep = s.legacyLink(buf, i, smp, err); !keep {
					continue
				}
			}
			// A GPU has fewer links than DCGM has fields (12 on A100, 18 on H100 SXM): the
			// fields of links it lacks answer blank or NOT_SUPPORTED and cost nothing; one line
			// per GPU and quantity says so, not one per link, and the quantity stays planned.
			if err != nil && !errors.Is(err, errBlank) {
				s.faults.notProvided(dev.name+"/"+spec.q.String(), err.Error())
				continue
			}
			buf = append(buf, smp)
			continue
		}
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

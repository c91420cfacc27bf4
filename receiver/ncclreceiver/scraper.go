package ncclreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/ncclreceiver"

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nvidiaproc"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/ncclreceiver/internal/metadata"
)

type ncclScraper struct {
	cfg       *Config
	set       receiver.Settings
	logger    *zap.Logger
	mb        *metadata.MetricsBuilder
	agg       *aggregator
	insp      *inspectorSource
	now       func() time.Time
	localHost string
	procRoot  string

	gpuMu     sync.Mutex
	gpus      []nvidiaproc.GPU
	gpusRead  bool
	saidOfPID map[int64]struct{} // processes whose missing join was logged

	ras     rankStates
	rasPoll rasPoller
}

func newScraper(cfg *Config, set receiver.Settings) *ncclScraper {
	s := &ncclScraper{
		cfg:       cfg,
		set:       set,
		logger:    set.Logger,
		mb:        metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, set),
		now:       time.Now,
		procRoot:  filepath.Join(cfg.RootPath, "proc"),
		saidOfPID: map[int64]struct{}{},
		rasPoll:   rasPoller{cfg: cfg.RAS, logger: set.Logger},
	}
	s.localHost, _ = os.Hostname()
	s.agg = newAggregator(cfg.Inspector.MaxCommunicators, cfg.Inspector.StaleAfter, s.busIDOf)
	return s
}

func (s *ncclScraper) start(ctx context.Context, host component.Host) error {
	if s.cfg.Inspector.DumpDir == "" {
		s.logger.Info("NCCL Inspector source off (inspector.dump_dir is empty)")
	} else {
		if _, err := os.Stat(s.cfg.Inspector.DumpDir); err != nil {
			// Not an error: the directory appears with the first job that dumps into it.
			s.logger.Info("NCCL Inspector dump directory not there yet; its files are read once they appear",
				zap.String("inspector.dump_dir", s.cfg.Inspector.DumpDir), zap.Error(err))
		}
		s.insp = newInspectorSource(s.cfg.Inspector, s.localHost, s.logger, s.agg, s.now)
		if err := s.insp.start(ctx, host, s.set.TelemetrySettings, s.set.ID); err != nil {
			return err
		}
	}
	return nil
}

func (s *ncclScraper) shutdown(ctx context.Context) error {
	if s.insp != nil {
		return s.insp.shutdown(ctx)
	}
	return nil
}

// busIDOf joins a record's process to its GPU's PCI address. It runs when a series is created,
// not per record, and reads the process's environment each time rather than caching it by pid: a
// pid is reused by a later job. Records of another node (a dump directory shared by the job's
// nodes) are not joined: their pids are not ours.
func (s *ncclScraper) busIDOf(host string, pid int64) string {
	if host != s.localHost || pid <= 0 {
		return ""
	}
	s.gpuMu.Lock()
	defer s.gpuMu.Unlock()
	s.readGPUs()
	id, err := gpuOfProcess(s.procRoot, pid, s.gpus)
	if err != nil {
		if _, said := s.saidOfPID[pid]; !said {
			if len(s.saidOfPID) >= 4096 { // a node's processes over months: forget, do not grow
				clear(s.saidOfPID)
			}
			s.saidOfPID[pid] = struct{}{}
			s.logger.Info("NCCL process not joined to a GPU; its series have no pci.bus_id", zap.Int64("pid", pid), zap.Error(err))
		}
	}
	return id
}

// readGPUs reads the NVIDIA module's GPU list until it has one; gpuMu is held.
func (s *ncclScraper) readGPUs() {
	if s.gpusRead && len(s.gpus) > 0 {
		return
	}
	gpus, err := nvidiaproc.List(s.procRoot)
	if err != nil {
		s.logger.Info("NVIDIA GPU list unreadable; NCCL records are not joined to GPUs", zap.Error(err))
	}
	s.gpus, s.gpusRead = gpus, true
}

// busIDOfUUID joins a textfile's GPU (named by its UUID, inspector.cc cuDeviceGetUuid) to its PCI
// address: the NVIDIA module lists the same UUID with a "GPU-" prefix.
func (s *ncclScraper) busIDOfUUID(uuid string) string {
	s.gpuMu.Lock()
	defer s.gpuMu.Unlock()
	s.readGPUs()
	for _, g := range s.gpus {
		if strings.EqualFold(g.UUID, "GPU-"+uuid) {
			return g.Address
		}
	}
	return ""
}

func (s *ncclScraper) scrape(ctx context.Context) (pmetric.Metrics, error) {
	now := s.now()
	ts := pcommon.NewTimestampFromTime(now)
	s.agg.expire(now)
	series, outcomes := s.agg.snapshot()

	var textfiles map[textfileBucket]textfileValues
	if s.insp != nil {
		var errs map[string]error
		textfiles, errs = readTextfiles(s.cfg.Inspector.DumpDir, s.cfg.Inspector.StaleAfter, now, s.busIDOfUUID)
		for path, err := range errs {
			s.insp.sayOnce(path, "textfile", "NCCL Inspector textfile unreadable this scrape; it is read again at the next", err)
		}
	}
	textfileByHost := map[string][]textfileBucket{}
	for k := range textfiles {
		textfileByHost[k.host] = append(textfileByHost[k.host], k)
	}

	byHost := map[string][]seriesKey{}
	for k := range series {
		byHost[k.host] = append(byHost[k.host], k)
	}
	hostSet := map[string]struct{}{}
	for h := range byHost {
		hostSet[h] = struct{}{}
	}
	for h := range textfileByHost {
		hostSet[h] = struct{}{}
	}
	hosts := []string{s.localHost}
	for h := range hostSet {
		if h != s.localHost {
			hosts = append(hosts, h)
		}
	}
	slices.Sort(hosts[1:])

	var ras *rasStatus
	if s.cfg.RAS.Endpoint != "" {
		ras = s.rasPoll.poll(ctx)
	}

	for _, h := range hosts {
		keys := byHost[h]
		sortKeys(keys)
		for _, k := range keys {
			v := series[k]
			s.mb.RecordNcclCollectiveSamplesDataPoint(ts, v.samples, k.commID, v.commName, v.nranks, v.nnodes, k.rank, k.op, k.bucket, v.busID)
			s.mb.RecordNcclCollectiveSampledBytesDataPoint(ts, int64(v.bytes), k.commID, v.commName, v.nranks, v.nnodes, k.rank, k.op, k.bucket, v.busID)
			if v.busBw.Count > 0 {
				s.mb.RecordNcclCollectiveLastBusBandwidthDataPoint(ts, v.lastBusBw, k.commID, v.commName, v.nranks, v.nnodes, k.rank, k.op, k.bucket, v.busID)
			}
		}
		s.recordTextfile(ts, textfiles, textfileByHost[h])
		if h == s.localHost {
			if s.insp != nil {
				for name, o := range metadata.MapAttributeOutcome {
					if n, ok := outcomes[name]; ok {
						s.mb.RecordNcclInspectorRecordsDataPoint(ts, n, o)
					}
				}
			}
			if s.cfg.RAS.Endpoint != "" {
				s.recordRAS(ts, ras)
			}
		}
		rb := s.mb.NewResourceBuilder()
		rb.SetHostName(h)
		s.mb.EmitForResource(metadata.WithResource(rb.Emit()))
	}
	md := s.mb.Emit()
	appendHistograms(md, series, byHost, ts)
	return md, nil
}

// recordTextfile records one host's textfile buckets.
func (s *ncclScraper) recordTextfile(ts pcommon.Timestamp, values map[textfileBucket]textfileValues, keys []textfileBucket) {
	slices.SortFunc(keys, func(a, b textfileBucket) int {
		return cmp.Or(cmp.Compare(a.busID, b.busID), cmp.Compare(a.commName, b.commName), cmp.Compare(a.op, b.op),
			cmp.Compare(a.size, b.size), cmp.Compare(a.algoProto, b.algoProto))
	})
	for _, k := range keys {
		v := values[k]
		if v.hasBusBw {
			s.mb.RecordNcclInspectorTextfileBusBandwidthDataPoint(ts, v.busBw, k.commName, k.nranks, k.op, k.size, k.algoProto, k.busID)
		}
		if v.hasExecUs {
			s.mb.RecordNcclInspectorTextfileDurationDataPoint(ts, v.execUs, k.commName, k.nranks, k.op, k.size, k.algoProto, k.busID)
		}
	}
}

func (s *ncclScraper) recordRAS(ts pcommon.Timestamp, st *rasStatus) {
	if st == nil {
		s.mb.RecordNcclRasUpDataPoint(ts, 0)
		return
	}
	s.mb.RecordNcclRasUpDataPoint(ts, 1)
	comms := summarize(*st)
	logRankChanges(s.logger, s.ras.observe(comms))
	ids := make([]string, 0, len(comms))
	for id := range comms {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		c := comms[id]
		for name, v := range metadata.MapAttributeRankState {
			s.mb.RecordNcclRasRanksDataPoint(ts, c.states[name], id, c.size, v)
		}
		ops := make([]string, 0, len(c.opsMax))
		for op := range c.opsMax {
			ops = append(ops, op)
		}
		slices.Sort(ops)
		for _, op := range ops {
			s.mb.RecordNcclRasOperationsDataPoint(ts, int64(c.opsMin[op]), id, op, metadata.AttributeBoundMin)
			s.mb.RecordNcclRasOperationsDataPoint(ts, int64(c.opsMax[op]), id, op, metadata.AttributeBoundMax)
		}
	}
}

func sortKeys(keys []seriesKey) {
	slices.SortFunc(keys, func(a, b seriesKey) int {
		return cmp.Or(cmp.Compare(a.commID, b.commID), cmp.Compare(a.rank, b.rank),
			cmp.Compare(a.op, b.op), cmp.Compare(a.bucket, b.bucket))
	})
}

package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver/internal/metadata"
)

// The rnic receiver records at its file seam (internal/recording/FORMAT.md): at each discovery,
// the tree it resolved facts from (class links, device and port attributes, the netdevs'
// statistics, the PCI tree when topology is on) as a Tree; at each scrape, every file it read as
// Files (or Errors) and the ethtool statistics as the Sample. Replay materializes the tree in a
// directory of its own, writes each scrape's values into it before the scrape reads them and fails
// the reads that failed, so that discovery, counters, topology and metrics run as they do live.

// rnicRecorder writes a recording while the receiver reads the live node, to a file
// (recording.write), to the capture ring (bursts.capture, capture.go), or to both.
type rnicRecorder struct {
	w    *recording.Writer
	ring *recording.Ring
	root string

	mu      sync.Mutex
	files   map[string]string
	errs    map[string]string
	ethtool map[string]map[string]uint64
	drivers map[string]string
	// subs are the fast sampler's passes since the last flush, taken every burstPeriod.
	subs        *recording.SubSamples
	burstPeriod time.Duration
}

// confine keeps every read inside root_path (sysfs.Reader.Confine: openat2 RESOLVE_BENEATH): the
// kernel links sysfs entries relatively (../../devices/...), so a link that leads out of root_path
// (an absolute one in class/infiniband) is not the host's sysfs, and what it leads to, a file only
// the collector's user may read included, must not become a metric's attribute. With root_path
// "/" nothing is outside. A root_path that does not exist yet (a mount that comes later) is
// confined when it does (refresh).
func (s *rnicScraper) confine() {
	if s.confined || s.root == string(filepath.Separator) {
		return
	}
	if err := s.reader.Confine(s.root); err == nil {
		s.confined = true
	}
}

// openSource chooses, once per Start, where the readings come from: the live node, the live node
// recorded, or a replay standing in for it. The seam is the host root the files are read under and
// the ethtool statistics. Start fails on a replay that cannot be read or a recording that cannot
// be created; the Writer is created here only, however often the devices are discovered again.
func (s *rnicScraper) openSource() error {
	rc := s.cfg.Recording
	switch {
	case rc.Replay != "":
		p, err := recording.OpenReplay(rc.Replay, metadata.Type.String(), rc.Loop)
		if err != nil {
			return err
		}
		rp := &rnicReplay{player: p, clock: recording.NewReplayClock(s.cfg.CollectionInterval)}
		s.root = p.Root()
		s.disc.sys = filepath.Join(s.root, "sys")
		// The recording came from elsewhere: no read may leave its tree.
		if err := s.reader.Confine(s.root); err != nil {
			_ = rp.close()
			return err
		}
		s.replay = rp
		s.reader.OnOpen = p.Fault
		s.ethtool = rp
		s.openCapture()
		if s.rec != nil {
			s.ethtool = &recordingEthtool{ethtoolStats: rp, r: s.rec}
		}
		return nil
	case rc.Write != "":
		w, err := recording.CreateFor(rc.Write, metadata.Type.String(), s.cfg.CollectionInterval)
		if err != nil {
			return fmt.Errorf("recording.write: %w", err)
		}
		s.rec = &rnicRecorder{w: w, root: s.root}
		s.reader.OnRead = s.rec.onRead
		s.logger.Info("Recording the readings", zap.String("path", w.Path()))
	}
	s.openCapture()
	s.checkRoot()
	s.confine()
	if s.cfg.Ethtool.Enabled && ethtoolEnabled(s.cfg.Metrics) {
		e, err := s.newEthtool()
		if err != nil {
			// Not fatal: the sysfs metrics do not need it.
			s.logger.Warn("ethtool statistics unavailable; PFC and pause metrics will be missing", zap.Error(err))
			return nil
		}
		s.ethtool = e
		if s.rec != nil {
			s.ethtool = &recordingEthtool{ethtoolStats: e, r: s.rec}
		}
	}
	return nil
}

// closeSource closes what openSource opened.
func (s *rnicScraper) closeSource() error {
	if s.ethtool != nil {
		s.ethtool.Close()
		s.ethtool = nil
	}
	var err error
	if s.rec != nil {
		err = s.rec.close()
		s.rec = nil
	}
	if s.replay != nil {
		err = errors.Join(err, s.replay.close())
		s.replay = nil
	}
	return err
}

// flushRecording writes the scrape's readings; a failed write is logged once, at Warn, until a
// write works again.
func (s *rnicScraper) flushRecording(at time.Time) {
	if s.rec == nil {
		return
	}
	if err := s.rec.flush(at); err != nil {
		s.log.Fail("recording", "Cannot write the recording", err)
		return
	}
	s.log.Recover("recording", "Writing the recording again")
}

// onRead fits sysfs.Reader.OnRead.
func (r *rnicRecorder) onRead(path string, content []byte, err error) {
	rel, rerr := filepath.Rel(r.root, path)
	if rerr != nil || !filepath.IsLocal(rel) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.files == nil {
		r.files, r.errs = map[string]string{}, map[string]string{}
	}
	if err != nil {
		if inner := errors.Unwrap(err); inner != nil {
			err = inner
		}
		r.errs[rel] = recording.ErrnoName(err)
		return
	}
	r.files[rel] = string(content)
}

// snapshot records the tree behind the ports and netdevs just discovered.
func (r *rnicRecorder) snapshot(at time.Time, ports []*port, netdevs []*netdev, topology bool) error {
	// The class directory itself, then the devices read (include/exclude apply to the recording).
	paths := []string{}
	seen := map[string]bool{}
	for _, p := range ports {
		if !seen[p.device] {
			seen[p.device] = true
			paths = append(paths, filepath.Join("sys", "class", "infiniband", p.device))
		}
	}
	for _, nd := range netdevs {
		paths = append(paths, filepath.Join("sys", "class", "net", nd.name))
	}
	if topology {
		paths = append(paths, "sys/bus/pci/devices", "sys/kernel/iommu_groups", "sys/class/iommu",
			"sys/module/nvidia", "sys/module/nvidia_peermem", "sys/module/nv_peer_mem",
			"proc/sys/kernel/osrelease", "proc/driver/nvidia/version")
	}
	tree, err := recording.Snapshot(r.root, paths, skipRNICPath)
	tree = append([]recording.Entry{{Path: "sys/class/infiniband", Dir: true}}, tree...)
	if len(tree) == 0 && err != nil {
		return err
	}
	return r.write(recording.Record{Time: at.UTC(), Tree: tree})
}

// write hands a record to the file and to the ring, whichever are there.
func (r *rnicRecorder) write(rec recording.Record) error {
	var err error
	if r.w != nil {
		err = r.w.Write(rec)
	}
	if r.ring != nil {
		err = errors.Join(err, r.ring.Write(rec))
	}
	return err
}

var gidEntryRE = regexp.MustCompile(`/gid_attrs/(ndevs|types)/([0-9]+)$`)

// skipRNICPath leaves out what no part of the receiver reads and what is large: GID tables beyond
// the first entries, the PCI functions' resources, drivers and power state, netdev queues.
func skipRNICPath(rel string) bool {
	base := filepath.Base(rel)
	switch base {
	case "power", "subsystem", "driver", "firmware_node", "msi_irqs", "queues", "uevent", "resource",
		"resource0", "resource1", "resource2", "resource3", "resource4", "resource5", "rom",
		"reset", "remove", "rescan", "hw_counters_lifespan", "mad_sa_cc", "gids", "pkeys",
		"broken_parity_status", "driver_override", "enable", "d3cold_allowed":
		return true
	}
	if m := gidEntryRE.FindStringSubmatch(rel); m != nil {
		return len(m[2]) > 1 // entries 0-9: the receiver stops at the first readable one
	}
	// Under a netdev only its statistics and identity are read.
	if i := strings.Index(rel, "/net/"); i >= 0 && strings.Count(rel[i+5:], "/") >= 1 {
		rest := rel[i+5:]
		parts := strings.SplitN(rest, "/", 3)
		// bonding/slaves names a bond's members, whose ethtool statistics are recorded.
		return len(parts) >= 2 && parts[1] != "statistics" && parts[1] != "dev_port" && parts[1] != "bonding"
	}
	return false
}

// flush writes the readings of one scrape.
func (r *rnicRecorder) flush(at time.Time) error {
	r.mu.Lock()
	rec := recording.Record{Time: at.UTC(), Files: r.files, Errors: r.errs}
	eth, drivers, subs := r.ethtool, r.drivers, r.subs
	r.files, r.errs, r.ethtool, r.drivers, r.subs = nil, nil, nil, nil, nil
	r.mu.Unlock()
	if rec.Files == nil {
		rec.Files = map[string]string{}
	}
	if len(rec.Errors) == 0 {
		rec.Errors = nil
	}
	if len(eth) > 0 || len(drivers) > 0 || subs != nil {
		b, err := json.Marshal(recording.RNICSample{Ethtool: eth, EthtoolDrivers: drivers, Bursts: subs})
		if err != nil {
			return err
		}
		rec.Sample = b
	}
	return r.write(rec)
}

func (r *rnicRecorder) close() error {
	if r.w == nil {
		return nil
	}
	return r.w.Close()
}

// addPass keeps one pass of the fast sampler (burstSampler.onPass) for the next scrape's record.
func (r *rnicRecorder) addPass(at time.Time, values map[string]uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.subs == nil {
		r.subs = &recording.SubSamples{Period: recording.Duration(r.burstPeriod)}
	}
	r.subs.Add(at.UTC(), values)
}

// recordingEthtool passes ethtool statistics through and keeps them for the scrape's record.
type recordingEthtool struct {
	ethtoolStats
	r *rnicRecorder
}

func (e *recordingEthtool) Stats(netdev string) (map[string]uint64, error) {
	stats, err := e.ethtoolStats.Stats(netdev)
	if err != nil {
		return stats, err
	}
	e.r.mu.Lock()
	defer e.r.mu.Unlock()
	if e.r.ethtool == nil {
		e.r.ethtool = map[string]map[string]uint64{}
	}
	kept := make(map[string]uint64)
	for _, st := range ethtoolAll {
		if v, ok := stats[st.name]; ok {
			kept[st.name] = v
		}
	}
	e.r.ethtool[netdev] = kept
	return stats, nil
}

func (e *recordingEthtool) Driver(netdev string) (string, error) {
	drv, err := e.ethtoolStats.Driver(netdev)
	if err == nil {
		e.r.mu.Lock()
		if e.r.drivers == nil {
			e.r.drivers = map[string]string{}
		}
		e.r.drivers[netdev] = drv
		e.r.mu.Unlock()
	}
	return drv, err
}

// rnicReplay replays a recording in place of the node.
type rnicReplay struct {
	player *recording.Player
	cur    recording.RNICSample
	// drivers are the netdevs' drivers as recorded, kept from the scrape that recorded them.
	drivers map[string]string
	trees   int // player.Trees() at the previous step
	// clock stamps the points with the time the sample was recorded at, on the replay's clock.
	clock    *recording.ReplayClock
	recorded time.Time // the current sample's recorded time, as the player maps it
}

// step writes the next recorded scrape into the replayed tree and reports whether a new tree was
// materialized before it (the recorded receiver discovered again: so must the replaying one),
// and the time to stamp the scrape's points with (ReplayClock). At the end of a non-looping
// replay the tree keeps its last values.
func (r *rnicReplay) step(now time.Time) (newTree bool, stamp time.Time, err error) {
	rec, ok, err := r.player.Next(now)
	if trees := r.player.Trees(); trees != r.trees {
		r.trees, newTree = trees, true
	}
	if ok {
		r.recorded = r.player.Time(rec.Time)
	}
	stamp = r.clock.Stamp(r.recorded, now)
	if err != nil || !ok {
		return newTree, stamp, err
	}
	r.cur = recording.RNICSample{}
	if rec.Sample != nil {
		if err := json.Unmarshal(rec.Sample, &r.cur); err != nil {
			return newTree, stamp, fmt.Errorf("sample at %s: %w", rec.Time, err)
		}
	}
	for nd, drv := range r.cur.EthtoolDrivers {
		if r.drivers == nil {
			r.drivers = map[string]string{}
		}
		r.drivers[nd] = drv
	}
	return newTree, stamp, nil
}

func (r *rnicReplay) close() error { return r.player.Close() }

// Stats serves the recorded ethtool statistics (ethtoolStats).
func (r *rnicReplay) Stats(netdev string) (map[string]uint64, error) {
	if s, ok := r.cur.Ethtool[netdev]; ok {
		return s, nil
	}
	return map[string]uint64{}, nil
}

// Driver serves the recorded driver name; recordings without one get every table.
func (r *rnicReplay) Driver(netdev string) (string, error) {
	if d, ok := r.drivers[netdev]; ok {
		return d, nil
	}
	return "", errors.New("no driver recorded")
}

// Close is part of ethtoolStats; the player is closed with the receiver.
func (r *rnicReplay) Close() {}

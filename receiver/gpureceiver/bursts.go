package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/internal/burst"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver/internal/metadata"
)

// The fast sampler (bursts.period, README.md "Microbursts") reads NVML's cumulative PCIe byte
// counters of every GPU, one nvmlDeviceGetFieldValues call per GPU per pass, on the goroutine (on
// Linux the OS thread) of a burst.Loop, and folds each GPU's transmit and receive bytes into a
// burst.Fold, which each scrape takes as gpu.burst.peak_rate.
//
// It shares no call with the scrape. The source hands it a burstReader: a copy of the GPUs'
// handles with a hold of its own on the library (nvmlInit is reference-counted, nvml.h
// nvmlShutdown: "Shutdown only occurs when the reference count reaches zero"), so that the scrape
// closing its source (a lost library, Shutdown) never pulls the library from under a pass. The only
// lock between them is the sampler's mutex, held to swap a reader, to add a pass's readings and to
// take the folds, never across a library call: a pass never waits for a scrape, nor a scrape for a
// pass. A reader that the scrape replaces is released on the sampler's goroutine between passes,
// the one place where it is surely not in use.

// burstReading is one read of one PCIe byte counter.
type burstReading struct {
	ok  bool
	raw uint64
	// tsUs is the library's timestamp of the value (µs since 1970), 0 where it gives none.
	tsUs int64
	// bits is the counter's width where its value type is narrower than 64 bits, 0 otherwise.
	bits uint8
}

// burstReader reads the PCIe byte counters of a source's GPUs for the fast sampler.
type burstReader interface {
	// devices lists the GPUs, in the order read takes them.
	devices() []gpuDevice
	// read reads GPU i's transmit and receive counters in one library call; the error says what
	// it could not read (errBurstNotSupported where the GPU does not provide it).
	read(i int, tx, rx *burstReading) error
	// release lets go of the reader's hold on the library; once, on the sampler's goroutine.
	release()
}

// burstSource is a source that can give the fast sampler a reader of its GPUs as they are now.
type burstSource interface {
	burstReader() (burstReader, error)
}

// errBurstNotSupported marks a counter the GPU does not provide (NVML_ERROR_NOT_SUPPORTED).
var errBurstNotSupported = errors.New("not supported")

// burstReaderOf returns src's reader, or why it has none.
func burstReaderOf(src source) (burstReader, error) {
	if bs, ok := src.(burstSource); ok {
		return bs.burstReader()
	}
	return nil, errNoPCIeCounter
}

var errNoPCIeCounter = errors.New("the source has no cumulative PCIe byte counter")

// Why the sampler does not run, said once per source kind (burstsNotRun).
const (
	msgBurstsDCGM = "The fast sampler (bursts.period) needs NVML's cumulative PCIe byte counters (fields 197/198) and does not run " +
		"with the DCGM source: DCGM's PCIe fields are profiling fields, sampled no faster than every 100 ms (NVIDIA/DCGM #310), " +
		"and rates averaged over that period; set source: nvml for gpu.burst.peak_rate"
	msgBurstsAMD = "The fast sampler (bursts.period) does not run on AMD GPUs: amdgpu's gpu_metrics has no cumulative PCIe byte " +
		"counter (pcie_bandwidth_acc adds up GB/s once per firmware cycle), so there is no gpu.burst.peak_rate"
	msgBurstsNone = "The fast sampler (bursts.period) cannot read this source's PCIe byte counters: no gpu.burst.peak_rate"
)

// burstTarget is one GPU's PCIe link in one direction.
type burstTarget struct {
	// key keeps the fold across readers: the GPU's key and the quantity.
	key seriesKey
	dev gpuDevice
	q   quantity
	dir metadata.AttributeDirection

	fold *burst.Fold
	// The counter unwrapped: a 32-bit one goes on from total by the growth modulo its width.
	raw, total uint64
	bits       uint8
	have       bool
}

// add folds one reading of the counter, at the library's timestamp where it gave one, else at.
func (t *burstTarget) add(at time.Time, r burstReading) {
	if !r.ok {
		return
	}
	if r.tsUs > 0 {
		at = time.UnixMicro(r.tsUs)
	}
	switch {
	case r.bits == 0 || r.bits >= 64 || !t.have || r.bits != t.bits:
		// A 64-bit counter goes back only on a reset, which the fold takes as such.
		t.total = r.raw
	default:
		// "Value can be wrapped" (nvml.h): less than 2^bits bytes between two reads (4 GiB in
		// 10 ms is 430 GB/s, beyond any PCIe link) is growth modulo the width.
		t.total += (r.raw - t.raw) & (1<<r.bits - 1)
	}
	t.raw, t.bits, t.have = r.raw, r.bits, true
	t.fold.Add(burst.Sample{T: at, Bytes: t.total})
}

// burstKey names a target's columns in a recording's sub-samples: "gpu0/pcie_tx_bytes", with
// "/ts_us" the library's timestamp and "/bits" a width narrower than 64 (FORMAT.md).
func burstKey(dev gpuDevice, q quantity) string { return dev.name + "/" + q.String() }

// burstSampler owns the folds and, on a live node, the loop that feeds them.
type burstSampler struct {
	clock  func() time.Time
	loop   *burst.Loop
	logger *zap.Logger
	// onPass, when recording, receives each pass's readings by column (burstPasses.add).
	onPass func(at time.Time, values map[string]uint64)
	// replayed: the folds take a recording's passes; nothing is read.
	replayed bool

	mu      sync.Mutex
	reader  burstReader
	retired []burstReader
	targets []*burstTarget // two per GPU of the reader (or the replay), transmit then receive
	// window names burst.window: the configured period, or a replay's recorded one.
	window string

	// The sampler goroutine's own: the readings of a pass, and the GPUs whose reads fail.
	tx, rx  []burstReading
	failing map[string]string
}

func newBurstSampler(period time.Duration, logger *zap.Logger, clock func() time.Time) *burstSampler {
	return &burstSampler{clock: clock, logger: logger, loop: burst.NewLoop(period, logger), window: period.String(), failing: map[string]string{}}
}

// setDevices makes the targets those of devs, keeping the fold of every GPU that stays, so that a
// rediscovery or a reconnection does not restart its windows. Called with mu held.
func (b *burstSampler) setDevicesLocked(devs []gpuDevice) {
	if len(b.targets) == 2*len(devs) {
		same := true
		for i, d := range devs {
			same = same && b.targets[2*i].dev == d
		}
		if same {
			return
		}
	}
	old := make(map[seriesKey]*burstTarget, len(b.targets))
	for _, t := range b.targets {
		old[t.key] = t
	}
	targets := make([]*burstTarget, 0, 2*len(devs))
	for _, d := range devs {
		for _, l := range []struct {
			q   quantity
			dir metadata.AttributeDirection
		}{{qPCIeTxBytes, metadata.AttributeDirectionTransmit}, {qPCIeRxBytes, metadata.AttributeDirectionReceive}} {
			k := seriesKey{gpu: d.key(), q: l.q}
			t := old[k]
			if t == nil {
				// No line rate: a peak alone (README.md, "Microbursts", why no shares).
				t = &burstTarget{key: k, q: l.q, dir: l.dir, fold: burst.New(0, nil)}
			}
			t.dev = d
			targets = append(targets, t)
		}
	}
	b.targets = targets
}

// setReader hands the sampler what to read (nil: nothing, the loop parks); the reader it replaces
// is released by the sampler's goroutine.
func (b *burstSampler) setReader(r burstReader) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.reader != nil {
		b.retired = append(b.retired, b.reader)
	}
	b.reader = r
	if r != nil {
		b.setDevicesLocked(r.devices())
	}
	b.loop.Wake()
}

func (b *burstSampler) idle() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reader == nil
}

// releaseRetired releases the readers replaced since the last pass; on the sampler's goroutine.
func (b *burstSampler) releaseRetired() {
	b.mu.Lock()
	retired := b.retired
	b.retired = nil
	b.mu.Unlock()
	for _, r := range retired {
		r.release()
	}
}

// exit releases every reader when the goroutine ends (after Stop).
func (b *burstSampler) exit() {
	b.mu.Lock()
	if b.reader != nil {
		b.retired = append(b.retired, b.reader)
		b.reader = nil
	}
	b.mu.Unlock()
	b.releaseRetired()
}

// start runs the loop on the live node.
func (b *burstSampler) start() {
	b.loop.Start(burst.Work{Pass: b.pass, Idle: b.idle, Parked: b.releaseRetired, Exit: b.exit})
}

// shutdown stops the loop; its goroutine releases the readers as it ends.
func (b *burstSampler) shutdown() { b.loop.Stop() }

// pass reads every GPU once and folds its bytes: one library call per GPU, none under the mutex.
func (b *burstSampler) pass() {
	b.releaseRetired()
	b.mu.Lock()
	r, targets := b.reader, b.targets
	b.mu.Unlock()
	if r == nil {
		return
	}
	at := b.clock()
	devs := r.devices()
	if len(b.tx) < len(devs) {
		b.tx, b.rx = make([]burstReading, len(devs)), make([]burstReading, len(devs))
	}
	for i := range devs {
		b.noteRead(devs[i], r.read(i, &b.tx[i], &b.rx[i]))
	}
	b.mu.Lock()
	for i := range devs {
		targets[2*i].add(at, b.tx[i])
		targets[2*i+1].add(at, b.rx[i])
	}
	b.mu.Unlock()
	b.loop.Paced(at)
	if b.onPass != nil {
		values := make(map[string]uint64, 4*len(devs))
		for i, d := range devs {
			putBurstColumns(values, d, qPCIeTxBytes, b.tx[i])
			putBurstColumns(values, d, qPCIeRxBytes, b.rx[i])
		}
		if len(values) > 0 {
			b.onPass(at, values)
		}
	}
}

// putBurstColumns adds one reading to a recorded pass.
func putBurstColumns(values map[string]uint64, d gpuDevice, q quantity, r burstReading) {
	if !r.ok {
		return
	}
	k := burstKey(d, q)
	values[k] = r.raw
	if r.tsUs > 0 {
		values[k+"/ts_us"] = uint64(r.tsUs)
	}
	if r.bits > 0 && r.bits < 64 {
		values[k+"/bits"] = uint64(r.bits)
	}
}

// noteRead says once per GPU and reason that the sampler cannot read its counters (the scrape
// may not read them at all: GPM's rates carry its PCIe bytes), and forgets it once it can again.
func (b *burstSampler) noteRead(d gpuDevice, err error) {
	k := d.key()
	if err == nil {
		delete(b.failing, k)
		return
	}
	if b.failing[k] == err.Error() {
		return
	}
	b.failing[k] = err.Error()
	log := b.logger.Warn
	if errors.Is(err, errBurstNotSupported) {
		log = b.logger.Info
	}
	log("The fast sampler cannot read the GPU's PCIe byte counters (NVML fields 197/198): its gpu.burst.peak_rate is missing",
		zap.String("device", d.name), zap.String("gpu.uuid", d.uuid), zap.Error(err))
}

// replay folds a recording's passes, their recorded times moved to the replay's clock by at.
// Nothing is read: the fold runs on exactly what was recorded.
func (b *burstSampler) replay(subs *recording.SubSamples, at func(time.Time) time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := time.Duration(subs.Period); p > 0 {
		// The recorded period names the window: the replaying receiver's own is not the one the
		// samples were taken at.
		b.window = p.String()
	}
	for i := range subs.Len() {
		rec := subs.Time(i)
		ts := at(rec)
		shiftUs := ts.Sub(rec).Microseconds()
		for _, t := range b.targets {
			k := burstKey(t.dev, t.q)
			v, ok := subs.Value(i, k)
			if !ok {
				continue
			}
			r := burstReading{ok: true, raw: v}
			if us, ok := subs.Value(i, k+"/ts_us"); ok && us > 0 {
				r.tsUs = int64(us) + shiftUs
			}
			if bits, ok := subs.Value(i, k+"/bits"); ok {
				r.bits = uint8(bits)
			}
			t.add(ts, r)
		}
	}
}

// burstPasses keeps the fast sampler's passes until the next poll's sample takes them (recording).
type burstPasses struct {
	period time.Duration
	mu     sync.Mutex
	subs   *recording.SubSamples
}

func (p *burstPasses) add(at time.Time, values map[string]uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.subs == nil {
		p.subs = &recording.SubSamples{Period: recording.Duration(p.period)}
	}
	p.subs.Add(at.UTC(), values)
}

// take returns the passes since the last take, nil if none.
func (p *burstPasses) take() *recording.SubSamples {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.subs
	p.subs = nil
	return s
}

// burstsWanted: the sampler runs with bursts.period set and its metric enabled.
func (s *gpuScraper) burstsWanted() bool {
	return s.cfg.Bursts.Period > 0 && s.cfg.Metrics.GpuBurstPeakRate.Enabled
}

// startBursts prepares the fast sampler at Start: on a live node with bursts.period set its
// loop, parked until a source hands it a reader (syncBursts); on a replay the fold of the
// recorded passes, which never reads.
func (s *gpuScraper) startBursts(replay bool) {
	switch {
	case replay && s.cfg.Metrics.GpuBurstPeakRate.Enabled:
		s.bursts = newBurstSampler(s.cfg.Bursts.Period, s.logger, s.now)
		s.bursts.replayed = true
	case !replay && s.burstsWanted():
		s.bursts = newBurstSampler(s.cfg.Bursts.Period, s.logger, s.now)
		s.bursts.loop.NewTicker = s.newBurstTicker
		if s.passes != nil {
			s.bursts.onPass = s.passes.add
		}
		s.bursts.start()
	}
}

// syncBursts hands the sampler a reader of the source's GPUs after a connection or a rediscovery,
// or takes it away when the source is closed. A source without PCIe byte counters says why once.
func (s *gpuScraper) syncBursts() {
	b := s.bursts
	if b == nil || b.replayed {
		return
	}
	if s.src == nil {
		b.setReader(nil)
		return
	}
	r, err := burstReaderOf(s.src)
	if err != nil {
		kind := s.src.kind()
		if !s.burstsSaid[kind] {
			s.burstsSaid[kind] = true
			switch kind {
			case sourceDCGM:
				s.logger.Info(msgBurstsDCGM, zap.Duration("bursts.period", s.cfg.Bursts.Period))
			case sourceAMDGPU:
				s.logger.Info(msgBurstsAMD, zap.Duration("bursts.period", s.cfg.Bursts.Period))
			default:
				s.logger.Info(msgBurstsNone, zap.String("source", kind), zap.Error(err))
			}
		}
	}
	b.setReader(r)
}

// recordBursts adds gpu.burst.peak_rate for every GPU and direction whose windows ended in this
// interval; on a replay it first folds the passes the polled sample recorded.
func (s *gpuScraper) recordBursts(now pcommon.Timestamp) {
	b := s.bursts
	if b == nil {
		return
	}
	if r, ok := s.src.(*replaySource); ok && b.replayed {
		b.mu.Lock()
		b.setDevicesLocked(r.devices())
		b.mu.Unlock()
		if subs := r.takeBursts(); subs != nil {
			b.replay(subs, r.player.Time)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.targets {
		iv := t.fold.Take()
		if iv.Windows == 0 {
			continue
		}
		s.series.Gauge(func() {
			s.mb.RecordGpuBurstPeakRateDataPoint(now, iv.Peak, metadata.AttributeComponentGpuPcie, t.dir, t.dev.name, t.dev.busID, b.window)
		})
	}
}

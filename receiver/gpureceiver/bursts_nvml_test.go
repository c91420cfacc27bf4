//go:build linux && cgo

package gpureceiver

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-iclens/otelcol-iclens/internal/fakenvml"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver/internal/metadata"
)

// The bursts are the JANOG model's step (../shared/seeds): every 600 ms, 40 ms of GPU 0's PCIe
// transmit at burstRate (the gradients leaving for the NIC), then nothing; a 1 s average of that
// is 3.3 GB/s. Every GPU receives at a constant burstRxRate. The counters are go-nvml's DGX H100
// mock (nvmlNode) without GPM, so that the scrape reads the same fields 197/198 as the sampler and
// interconnect.io is their growth.
const (
	burstRate   = 50e9 // bytes/s: a Gen5 x16 link's worth
	burstRxRate = 1e9  // bytes/s
	burstLen    = 40 * time.Millisecond
	burstStep   = 600 * time.Millisecond
	burstPeriod = 10 * time.Millisecond
)

// burstTxAt is GPU 0's PCIe transmit bytes by elapsed time e.
func burstTxAt(e time.Duration) uint64 {
	return uint64(burstRate * (time.Duration(e/burstStep)*burstLen + min(e%burstStep, burstLen)).Seconds())
}

// nvmlBurstRig is an NVML scraper with the fast sampler on at 10 ms over the mock's eight GPUs,
// driven by a tick channel of the test's and the test's clock. The mock serves 197/198 from the
// step shape at the elapsed time e plus delay, and stamps each value with that time, as NVML's
// nvmlFieldValue_t.timestamp does: delay is how much later than the pass's clock the driver
// reads the counter.
type nvmlBurstRig struct {
	s     *gpuScraper
	node  *nvmlNode
	logs  *observer.ObservedLogs
	clock *testClock
	start time.Time

	ticks    chan time.Time
	passDone chan struct{}
	// jitter: each pass's counters are read 0, 1, 2 or 3 ms after its clock, in turn.
	jitter bool
	// base is where every counter starts (near 2^32 to make a 32-bit one wrap).
	base uint64

	e, delay time.Duration
	// fieldReads counts the nvmlDeviceGetFieldValues calls that asked for field 197.
	fieldReads atomic.Int64
	// block, when set, holds the sampler's calls (197 and 198 alone) until it is closed; entered
	// says one is held.
	block   chan struct{}
	entered chan struct{}
	inits   atomic.Int64
	downs   atomic.Int64
	// host is what the scraper starts on (one with a capture extension); nil: none.
	host component.Host
}

func newNVMLBurstRig(t *testing.T, edit func(*Config), setup func(*nvmlBurstRig)) *nvmlBurstRig {
	t.Helper()
	node := newNVMLNode()
	r := &nvmlBurstRig{node: node, ticks: make(chan time.Time), passDone: make(chan struct{}, 1)}
	if setup != nil {
		setup(r)
	}
	node.InitFunc = func() nvml.Return { r.inits.Add(1); return nvml.SUCCESS }
	node.ShutdownFunc = func() nvml.Return { r.downs.Add(1); return nvml.SUCCESS }
	for i, d := range node.Devices {
		node.noGPM[i] = true
		dev := d.(*server.Device)
		inner := dev.GetFieldValuesFunc
		dev.GetFieldValuesFunc = func(values []nvml.FieldValue) nvml.Return {
			if r.block != nil && len(values) == 2 && values[0].FieldId == nvml.FI_DEV_PCIE_COUNT_TX_BYTES {
				select {
				case r.entered <- struct{}{}:
				default:
				}
				<-r.block
			}
			ret := inner(values)
			at := r.e + r.delay
			for k := range values {
				v := &values[k]
				var x uint64
				switch v.FieldId {
				case nvml.FI_DEV_PCIE_COUNT_TX_BYTES:
					r.fieldReads.Add(1)
					x = r.base
					if i == 0 {
						x += burstTxAt(at)
					}
				case nvml.FI_DEV_PCIE_COUNT_RX_BYTES:
					x = r.base + uint64(burstRxRate*at.Seconds())
				default:
					continue
				}
				v.Timestamp = r.start.Add(at).UnixMicro()
				v.ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
				if node.pcieType == nvml.VALUE_TYPE_UNSIGNED_INT {
					v.ValueType, x = uint32(nvml.VALUE_TYPE_UNSIGNED_INT), x&math.MaxUint32
				}
				binary.LittleEndian.PutUint64(v.Value[:], x)
			}
			return ret
		}
	}
	s, logs, clock := newTestScraper(t, newFakeDCGM(0), func(c *Config) {
		c.Source = sourceNVML
		c.CollectionInterval = time.Second
		c.Bursts.Period = burstPeriod
		if edit != nil {
			edit(c)
		}
	})
	s.live = func(_ *Config, logger *zap.Logger, want quantitySet, numa func(string) int64) (source, error) {
		return openNVML(node, logger, want, numa, nil)
	}
	s.newBurstTicker = func(time.Duration) (<-chan time.Time, func()) { return r.ticks, func() {} }
	r.s, r.logs, r.clock, r.start = s, logs, clock, clock.t
	require.NoError(t, s.start(context.Background(), r.host))
	t.Cleanup(func() { _ = s.shutdown(context.Background()) })
	if s.bursts != nil {
		// Set before the first tick, which is what hands it to the sampler's goroutine.
		onPass := s.bursts.onPass
		s.bursts.onPass = func(at time.Time, v map[string]uint64) {
			if onPass != nil {
				onPass(at, v)
			}
			r.passDone <- struct{}{}
		}
	}
	return r
}

// at sets the counters and the clock to elapsed time e, read without delay (a scrape's reads).
func (r *nvmlBurstRig) at(e time.Duration) {
	r.e, r.delay = e, 0
	r.clock.t = r.start.Add(e)
}

// passes runs the sampler through elapsed times from..to, one tick every burstPeriod, and waits
// for each pass before the counters move on.
func (r *nvmlBurstRig) passes(t *testing.T, from, to time.Duration) {
	t.Helper()
	for e := from; e <= to; e += burstPeriod {
		r.at(e)
		if r.jitter {
			r.delay = time.Duration((e/burstPeriod)%4) * time.Millisecond
		}
		r.ticks <- r.clock.t
		select {
		case <-r.passDone:
		case <-time.After(time.Minute):
			t.Fatalf("the sampler did not fold the pass at %v within a minute", e)
		}
	}
}

// steps scrapes the series' baseline, runs the sampler through two JANOG steps (1.2 s of passes)
// and returns the scrape after them.
func (r *nvmlBurstRig) steps(t *testing.T) pmetric.Metrics {
	t.Helper()
	r.at(0)
	scrapeOnce(t, r.s) // the series' baseline
	r.passes(t, 0, 1200*time.Millisecond)
	r.at(1200 * time.Millisecond)
	return scrapeOnce(t, r.s)
}

// peak returns gpu.burst.peak_rate of a GPU and direction, checking its attributes.
func peak(t *testing.T, m pmetric.Metrics, device, direction string) float64 {
	t.Helper()
	p := one(t, m, "gpu.burst.peak_rate", "device", device, "direction", direction)
	assert.Equal(t, "gpu_pcie", p.attrs["component"])
	assert.Equal(t, "10ms", p.attrs["burst.window"])
	assert.NotEmpty(t, p.attrs["pci.bus_id"])
	return p.f
}

// TestBurstsPeakOfGPUPCIe: the sampler reads 197/198 of every GPU every 10 ms and the scrape
// reports GPU 0's transmit peak at the bursts' rate, within 5 %, where interconnect.io's 1.2 s of
// bytes average 3.3 GB/s, and is unchanged by the sampler. The driver reads the counters up to
// 3 ms after each pass's clock: the windows are timed by NVML's own timestamps (timing them by
// the passes would put the peak 10 % high).
func TestBurstsPeakOfGPUPCIe(t *testing.T) {
	r := newNVMLBurstRig(t, nil, func(r *nvmlBurstRig) { r.jitter = true })
	m := r.steps(t)
	assert.InEpsilon(t, burstRate, peak(t, m, "gpu0", "transmit"), 0.05, "the peak of a 10 ms window inside a burst")
	assert.InEpsilon(t, burstRxRate, peak(t, m, "gpu0", "receive"), 1e-6, "a constant rate peaks at itself")
	assert.Zero(t, peak(t, m, "gpu1", "transmit"), "an idle link has its peak too, at 0")
	assert.Len(t, points(m, "gpu.burst.peak_rate"), 16, "8 GPUs, 2 directions: one series each")
	assert.Equal(t, "0000:1b:00.0", one(t, m, "gpu.burst.peak_rate", "device", "gpu0", "direction", "transmit").attrs["pci.bus_id"])

	total := one(t, m, "interconnect.io", "device", "gpu0", "component", "gpu_pcie", "direction", "transmit").i
	assert.EqualValues(t, burstTxAt(1200*time.Millisecond), total, "interconnect.io counts every byte, the sampler's reads changing nothing")
	assert.Less(t, float64(total)/1.2, burstRate/10, "the average hides the bursts")
	assert.Empty(t, r.logs.FilterLevelExact(zap.WarnLevel).All(), "a sampler that holds its period says nothing")

	// An interval in which no window ended (no pass) has no peak point.
	r.at(2200 * time.Millisecond)
	assert.Empty(t, points(scrapeOnce(t, r.s), "gpu.burst.peak_rate"))
}

// TestBurstsOffByDefault: without bursts.period (or with gpu.burst.peak_rate disabled) there is no
// sampler: the only reads of 197/198 are the scrapes', one call per GPU each, and no peak.
func TestBurstsOffByDefault(t *testing.T) {
	for name, edit := range map[string]func(*Config){
		"default":         func(c *Config) { c.Bursts.Period = 0 },
		"metric disabled": func(c *Config) { c.Metrics.GpuBurstPeakRate.Enabled = false },
	} {
		t.Run(name, func(t *testing.T) {
			r := newNVMLBurstRig(t, edit, nil)
			require.Nil(t, r.s.bursts)
			for i := 1; i <= 3; i++ {
				r.at(time.Duration(i) * time.Second)
				assert.Empty(t, points(scrapeOnce(t, r.s), "gpu.burst.peak_rate"))
			}
			assert.EqualValues(t, 3*8, r.fieldReads.Load(), "one read per GPU and scrape, the scrapes'")
			assert.EqualValues(t, 1, r.inits.Load(), "no hold on NVML but the source's")
		})
	}
}

// TestBurstsCounterWraps: on a driver that gives 197/198 a 32-bit value type the counters wrap at
// 2^32; here GPU 0's transmit wraps in the middle of its first burst. The sampler unwraps between
// passes: the peak is the bursts' rate and interconnect.io the bytes moved.
func TestBurstsCounterWraps(t *testing.T) {
	r := newNVMLBurstRig(t, nil, func(r *nvmlBurstRig) {
		r.node.pcieType = nvml.VALUE_TYPE_UNSIGNED_INT
		r.base = math.MaxUint32 - 1e9 // 20 ms into the first burst
	})
	m := r.steps(t)
	assert.InEpsilon(t, burstRate, peak(t, m, "gpu0", "transmit"), 0.05)
	assert.InEpsilon(t, burstRxRate, peak(t, m, "gpu0", "receive"), 1e-6)
	assert.EqualValues(t, burstTxAt(1200*time.Millisecond), one(t, m, "interconnect.io", "device", "gpu0", "component", "gpu_pcie", "direction", "transmit").i)
	// The fold's counter went on past 2^32 (a 64-bit reading of it would have gone back, a reset
	// that costs the window across the wrap).
	b := r.s.bursts
	b.mu.Lock()
	defer b.mu.Unlock()
	tx := b.targets[0]
	require.Equal(t, "gpu0", tx.dev.name)
	assert.EqualValues(t, 32, tx.bits, "the value type NVML declares")
	assert.Equal(t, r.base+burstTxAt(1200*time.Millisecond), tx.total, "unwrapped: beyond 2^32")
}

// TestBurstsRecordThenReplay records the sampler's passes with the polls and replays them: the
// fold runs on the recorded readings at their recorded NVML timestamps, so the replay reports the
// live peaks exactly, with the recorded period as their window, whatever the replaying receiver's
// own bursts.period (unset here).
func TestBurstsRecordThenReplay(t *testing.T) {
	file := filepath.Join(t.TempDir(), "node1-gpu.jsonl")
	r := newNVMLBurstRig(t, func(c *Config) { c.Recording.Write = file }, func(r *nvmlBurstRig) { r.jitter = true })
	live := r.steps(t)
	require.NoError(t, r.s.shutdown(context.Background()))

	rec, err := recording.Open(file)
	require.NoError(t, err)
	samples := rec.Samples()
	require.Len(t, samples, 2)
	var s recording.GPUSample
	require.NoError(t, json.Unmarshal(samples[1].Sample, &s))
	require.NotNil(t, s.Bursts, "the second poll's sample carries the passes")
	assert.Equal(t, 121, s.Bursts.Len())
	assert.Equal(t, recording.Duration(burstPeriod), s.Bursts.Period)
	v, ok := s.Bursts.Value(4, "gpu0/pcie_tx_bytes")
	require.True(t, ok)
	assert.Equal(t, burstTxAt(40*time.Millisecond), v, "the raw counter, read at 40 ms (0 ms late)")
	ts, ok := s.Bursts.Value(3, "gpu0/pcie_tx_bytes/ts_us")
	require.True(t, ok)
	assert.EqualValues(t, r.start.Add(33*time.Millisecond).UnixMicro(), ts, "NVML's timestamp of the value read 3 ms late")
	_, ok = s.Bursts.Value(0, "gpu0/pcie_tx_bytes/bits")
	assert.False(t, ok, "a 64-bit counter has no width column")

	cfg := createDefaultConfig().(*Config)
	cfg.Recording.Replay = file
	cfg.CollectionInterval = time.Second
	replay := newPatientScraper(cfg, receivertest.NewNopSettings(metadata.Type))
	at := time.Now()
	replay.now = func() time.Time { at = at.Add(time.Second); return at }
	require.NoError(t, replay.start(context.Background(), nil))
	defer func() { require.NoError(t, replay.shutdown(context.Background())) }()
	var m pmetric.Metrics
	for range 2 {
		m = scrapeOnce(t, replay)
	}
	for _, dev := range []string{"gpu0", "gpu3"} {
		for _, dir := range []string{"transmit", "receive"} {
			assert.Equal(t, peak(t, live, dev, dir), peak(t, m, dev, dir), "%s %s: the replay folds the recorded passes", dev, dir)
		}
	}
	assert.Len(t, points(m, "gpu.burst.peak_rate"), 16)
}

// TestBurstsFallingBehindSaidOnce: a node that holds a pass only every 30 ms at bursts.period 10ms
// (ticks dropped, never queued: burst.Loop) says so once, at warn, with the period achieved; the
// windows are then 30 ms long, and the peak is their rate.
func TestBurstsFallingBehindSaidOnce(t *testing.T) {
	r := newNVMLBurstRig(t, nil, nil)
	r.at(0)
	scrapeOnce(t, r.s)
	for e := time.Duration(0); e <= 3*time.Second; e += 30 * time.Millisecond {
		r.at(e)
		r.ticks <- r.clock.t
		select {
		case <-r.passDone:
		case <-time.After(time.Minute):
			t.Fatalf("the sampler did not fold the pass at %v within a minute", e)
		}
	}
	r.at(3 * time.Second)
	m := scrapeOnce(t, r.s)
	warns := r.logs.FilterLevelExact(zap.WarnLevel).FilterMessageSnippet("cannot hold bursts.period").All()
	require.Len(t, warns, 1, "said once")
	assert.Equal(t, 30*time.Millisecond, warns[0].ContextMap()["achieved"])
	assert.Equal(t, burstPeriod, warns[0].ContextMap()["period"])
	assert.InEpsilon(t, burstRate, peak(t, m, "gpu0", "transmit"), 0.05, "a 30 ms window inside a 40 ms burst")
}

// TestBurstsStuckReadDoesNotDelayScrape: an NVML call of the sampler that does not return (a GPU
// that fell off the bus can block one) delays neither the scrape nor Shutdown: the two share no
// lock across a library call. The sampler's own hold on NVML is given back when its call returns.
func TestBurstsStuckReadDoesNotDelayScrape(t *testing.T) {
	r := newNVMLBurstRig(t, nil, func(r *nvmlBurstRig) {
		r.block, r.entered = make(chan struct{}), make(chan struct{}, 1)
	})
	r.at(0)
	r.ticks <- r.clock.t
	select {
	case <-r.entered:
	case <-time.After(time.Minute):
		t.Fatal("the sampler did not call NVML within a minute")
	}
	done := make(chan error, 1)
	go func() {
		r.at(time.Second)
		_, err := r.s.scrape(context.Background())
		if err == nil {
			err = r.s.shutdown(context.Background())
		}
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("a scrape and Shutdown waited for the sampler's stuck call")
	}
	assert.EqualValues(t, 2, r.inits.Load(), "the source's hold on NVML and the sampler's")
	assert.EqualValues(t, 1, r.downs.Load(), "Shutdown gave back the source's; the sampler's call holds its own")
	close(r.block)
	deadline := time.Now().Add(time.Minute)
	for r.downs.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	assert.EqualValues(t, 2, r.downs.Load(), "the sampler gave its hold back when its call returned")
}

const burstChildEnv = "GPURECEIVER_FAKE_NVML_BURSTS"

// fakeBurstMiBs is the burst rate the C fake is given (FAKE_NVML_PCIE_BURST=40000:600000:40000).
const fakeBurstMiBs = 40000

// fakeBurstTx is the C fake's PCIe transmit bytes of every GPU at elapsed time e after the child's
// clock origin (fakeClockOffset after the fake's epoch), as fakenvml.c bytesAt counts them.
func fakeBurstTx(e time.Duration) float64 {
	dt := fakeClockOffset + e.Microseconds()
	in := min(dt%600_000, 40_000)
	return float64(fakeBurstMiBs<<20) * float64(dt/600_000*40_000+in) / 1e6
}

// TestBurstsFakeLibNVML runs the sampler through go-nvml's real cgo path (nvmlFieldValue_t as a C
// struct, its timestamp included) against the fake libnvidia-ml.so.1 of an H100 whose PCIe transmit
// moves in the JANOG step (FAKE_NVML_PCIE_BURST), in a child process that drives the fake's clock
// file and the sampler's ticks. The scrape's PCIe bytes come from GPM's rates there, so every read
// of 197/198 in the fake's log is the sampler's.
func TestBurstsFakeLibNVML(t *testing.T) {
	if os.Getenv(nvmlChildEnv) != "" || os.Getenv(burstChildEnv) != "" {
		t.Skip("parent test")
	}
	lib := fakenvml.Build(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestBurstsFakeLibNVMLChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), burstChildEnv+"=1", "LD_LIBRARY_PATH="+lib, "FAKE_NVML_MODEL=h100",
		"FAKE_NVML_PCIE_BURST=40000:600000:"+strconv.Itoa(fakeBurstMiBs),
		"FAKE_NVML_CALL_LOG="+filepath.Join(t.TempDir(), "calls.log"),
		"FAKE_NVML_CLOCK_FILE="+filepath.Join(t.TempDir(), "clock"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Run(), "child failed:\n%s", out.String())
	require.Contains(t, out.String(), "--- PASS: TestBurstsFakeLibNVMLChild", "child did not run:\n%s", out.String())
}

func TestBurstsFakeLibNVMLChild(t *testing.T) {
	if os.Getenv(burstChildEnv) == "" {
		t.Skip("run by TestBurstsFakeLibNVML in a child process")
	}
	clockFile := os.Getenv("FAKE_NVML_CLOCK_FILE")
	clock := &testClock{}
	at := func(e time.Duration) {
		us := fakeClockEpoch + fakeClockOffset + e.Microseconds()
		clock.t = time.UnixMicro(us)
		require.NoError(t, os.WriteFile(clockFile, []byte(strconv.FormatInt(us, 10)), 0o644))
	}
	at(0)
	cfg := createDefaultConfig().(*Config)
	cfg.Source = sourceNVML
	cfg.RootPath = sysfsFixture(t)
	cfg.CollectionInterval = time.Second
	cfg.Bursts.Period = burstPeriod
	require.NoError(t, cfg.Validate())
	core, logs := observer.New(zap.DebugLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	s := newPatientScraper(cfg, set)
	s.now = clock.now
	ticks, passDone := make(chan time.Time), make(chan struct{}, 1)
	s.newBurstTicker = func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }
	ctx := context.Background()
	require.NoError(t, s.start(ctx, nil))
	defer func() { require.NoError(t, s.shutdown(ctx)) }()
	require.NotNil(t, s.src, "the fake libnvidia-ml.so.1 was not loaded: %v", logs.All())
	require.NotNil(t, s.bursts)
	s.bursts.onPass = func(time.Time, map[string]uint64) { passDone <- struct{}{} }

	at(time.Second) // the GPM samples need a period after the one taken at setup
	scrapeOnce(t, s)
	passes := 0
	for e := time.Second; e <= 2200*time.Millisecond; e += burstPeriod {
		at(e)
		ticks <- clock.t
		<-passDone
		passes++
	}
	at(2200 * time.Millisecond)
	m := scrapeOnce(t, s)

	for _, dev := range []string{"gpu0", "gpu1"} {
		assert.InEpsilon(t, float64(fakeBurstMiBs<<20), peak(t, m, dev, "transmit"), 0.05, "%s: the bursts' rate", dev)
		assert.InEpsilon(t, float64(fakePCIeRx), peak(t, m, dev, "receive"), 1e-3, "%s: a constant rate peaks at itself", dev)
	}
	tx := one(t, m, "interconnect.io", "device", "gpu0", "component", "gpu_pcie", "direction", "transmit").i
	assert.InDelta(t, fakeBurstTx(2200*time.Millisecond)-fakeBurstTx(time.Second), float64(tx), 4,
		"interconnect.io is GPM's bytes between the scrapes, the sampler's reads changing nothing")
	calls := readFakeNVMLLog(t)
	for g := range 2 {
		assert.Len(t, calls.pcie[g][197], passes, "GPU %d: field 197 read once a pass, by the sampler alone", g)
		assert.Len(t, calls.pcie[g][198], passes, "GPU %d: field 198 read once a pass", g)
	}
	assert.Empty(t, logs.FilterLevelExact(zap.WarnLevel).All())
}

// benchDevice is a GPU for BenchmarkBurstPass: 197/198 growing with every call, stamped, and
// nothing else (go-nvml's mock records every call, which a benchmark would measure).
type benchDevice struct {
	nvml.Device
	n uint64
}

func (d *benchDevice) GetFieldValues(values []nvml.FieldValue) nvml.Return {
	d.n++
	for k := range values {
		v := &values[k]
		v.NvmlReturn, v.ValueType, v.Timestamp = uint32(nvml.SUCCESS), uint32(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG), int64(d.n*10_000)
		binary.LittleEndian.PutUint64(v.Value[:], d.n*100_000_000)
	}
	return nvml.SUCCESS
}

// BenchmarkBurstPass is one pass of the fast sampler over eight GPUs on a Go stand-in for NVML,
// folded: the sampler's own cost. A live pass adds one nvmlDeviceGetFieldValues call per GPU
// (BenchmarkBurstPassLibNVML measures go-nvml's cgo path to the fake library; on a real driver
// each is an ioctl into the kernel module, which `make device-check` is the place to measure).
func BenchmarkBurstPass(b *testing.B) {
	benchPass(b, func(n int) burstReader {
		rd := &nvmlBurstReader{fields: make([][2]nvml.FieldValue, n)}
		for i := range n {
			rd.devs = append(rd.devs, gpuDevice{id: uint(i), name: "gpu" + string(rune('0'+i)), uuid: "GPU-" + string(rune('0'+i))})
			rd.handles = append(rd.handles, &benchDevice{})
		}
		return rd
	})
}

// BenchmarkBurstPassLibNVML is BenchmarkBurstPass through go-nvml's real cgo path to the fake
// libnvidia-ml.so.1 (internal/fakenvml without a clock file or a call log: one clock_gettime per
// call), eight H100s. It needs the fake on the library path, so it runs only when asked:
//
//	d=$(go list -m -f '{{.Dir}}' github.com/NVIDIA/go-nvml); mkdir -p /tmp/fakenvml
//	gcc -shared -fPIC -DNVML_NO_UNVERSIONED_FUNC_DEFS=1 -I $d/pkg/nvml -Wl,-soname,libnvidia-ml.so.1 \
//	    -o /tmp/fakenvml/libnvidia-ml.so.1 ../../internal/fakenvml/csrc/fakenvml.c
//	GPURECEIVER_BENCH_LIBNVML=1 FAKE_NVML_GPUS=8 LD_LIBRARY_PATH=/tmp/fakenvml \
//	    go test -run '^$' -bench BurstPassLibNVML -benchmem .
func BenchmarkBurstPassLibNVML(b *testing.B) {
	if os.Getenv("GPURECEIVER_BENCH_LIBNVML") == "" {
		b.Skip("set GPURECEIVER_BENCH_LIBNVML=1 with the fake libnvidia-ml.so.1 on LD_LIBRARY_PATH (see the comment)")
	}
	benchPass(b, func(n int) burstReader {
		src, err := openNVML(nvml.New(), zap.NewNop(), wantedQuantities(metadata.DefaultMetricsBuilderConfig().Metrics), nil, nil)
		require.NoError(b, err)
		require.Len(b, src.devices(), n, "FAKE_NVML_GPUS=8")
		r, err := src.burstReader()
		require.NoError(b, err)
		return r
	})
}

func benchPass(b *testing.B, reader func(n int) burstReader) {
	const gpus = 8
	bs := newBurstSampler(burstPeriod, zap.NewNop(), nil)
	at := time.Unix(1_800_000_000, 0)
	bs.clock = func() time.Time { at = at.Add(burstPeriod); return at }
	bs.setReader(reader(gpus))
	b.ReportAllocs()
	for b.Loop() {
		bs.pass()
	}
	if iv := bs.targets[0].fold.Take(); iv.Windows == 0 || iv.Peak <= 0 {
		b.Fatalf("the passes folded nothing: %+v", iv)
	}
	b.ReportMetric(gpus, "gpus/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(burstPeriod.Nanoseconds())*100, "%core@10ms")
}

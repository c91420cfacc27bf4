package gpureceiver

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver/internal/metadata"
)

var update = flag.Bool("update", false, "rewrite testdata/expected_metrics and testdata/replay")

// goldenScenario is one state of a GPU library, fed to the receiver through the Go fakes; its
// expected metrics, after the given number of scrapes 10 s apart, are
// testdata/expected_metrics/<name>.yaml. Start times and timestamps are compared: the clocks are
// injected, and the receiver starts 10 s before the first scrape, so that a gauge carrying
// anything but the receiver's start shows.
type goldenScenario struct {
	name    string
	scrapes int
	// setup returns the scraper to start; before runs before each scrape (0-based).
	setup  func(t *testing.T) *gpuScraper
	before func(scrape int)
}

// h100Fake is two H100s behind DCGM with the profiling module: every field the receiver reads,
// PCIe rates at 1 s samples, an XID on GPU 0 (values as nvidia-smi and DCGM report them; the
// fields are those of dcgm_fields.h).
func h100Fake() *fakeDCGM {
	f := newFakeDCGM(2)
	for g := uint(0); g < 2; g++ {
		f.setInt(g, dcgmFieldGPUUtil, 30+int64(g))
		f.setInt(g, dcgmFieldMemCopyUtil, 7)
		f.setInt(g, dcgmFieldPCIeReplay, 3)
		f.setInt(g, dcgmFieldPCIeGen, 5)
		f.setInt(g, dcgmFieldPCIeMaxGen, 5)
		f.setInt(g, dcgmFieldPCIeWidth, 16)
		f.setInt(g, dcgmFieldPCIeMaxWidth, 16)
		f.setDouble(g, dcgmFieldDRAMActive, 0.25)
		f.setDouble(g, dcgmFieldSMActive, 0.5)
		f.setDouble(g, dcgmFieldGREngineActive, 0.75)
	}
	f.addSample(0, dcgmFieldXID, 2*sec, 79)
	return f
}

func goldenScenarios() []goldenScenario {
	base := int64(1_800_000_000) * sec
	var f *fakeDCGM
	dcgm := func(mutate func(*Config)) func(t *testing.T) *gpuScraper {
		return func(t *testing.T) *gpuScraper {
			s, _, clock := newTestScraper(t, f, mutate)
			s.now = func() time.Time { return clock.t }
			return s
		}
	}
	rates := func(scrape int) {
		for k := int64(scrape*10 + 1); k <= int64(scrape*10+10); k++ {
			for g := uint(0); g < uint(len(f.gpus)); g++ {
				f.addSample(g, dcgmFieldPCIeTxRate, base+k*sec, 1000*int64(g+1))
				f.addSample(g, dcgmFieldPCIeRxRate, base+k*sec, 500)
				f.addSample(g, dcgmFieldNVLinkTxRate, base+k*sec, 1_000_000)
			}
		}
		f.setInt(0, dcgmFieldPCIeReplay, 3+int64(scrape))
	}
	return []goldenScenario{
		{name: "dcgm_h100", scrapes: 2, before: rates,
			setup: func(t *testing.T) *gpuScraper { f = h100Fake(); return dcgm(nil)(t) }},
		{name: "dcgm_no_profiling_module", scrapes: 2, before: rates,
			setup: func(t *testing.T) *gpuScraper {
				f = h100Fake()
				f.profErr = &dcgmError{op: "listing profiling metrics", code: dcgmStModuleNotLoaded, msg: "module not loaded"}
				return dcgm(nil)(t)
			}},
		{name: "dcgm46_hopper_counter", scrapes: 4,
			before: func(scrape int) { addHopperRates(f, 0, base, int64(scrape*10), int64(scrape*10+10)) },
			setup:  func(t *testing.T) *gpuScraper { f = newFakeDCGMHopper(1, true); return dcgm(nil)(t) }},
		{name: "dcgm46_hopper_no_gpm_pcie", scrapes: 4,
			before: func(scrape int) { addHopperRates(f, 0, base, int64(scrape*10), int64(scrape*10+10)) },
			setup:  func(t *testing.T) *gpuScraper { f = newFakeDCGMHopper(1, false); return dcgm(nil)(t) }},
		{name: "dcgm_mig_xid", scrapes: 1, before: func(int) {},
			setup: func(t *testing.T) *gpuScraper {
				f = newFakeDCGM(2)
				f.mig = []dcgmEntity{{group: dcgmFEGPUI, id: 0, gpu: 1}, {group: dcgmFEGPUCI, id: 0, gpu: 1}}
				f.addSample(1, dcgmFieldXID, 2*sec, 13)
				f.history = append(f.history, dcgmValue{gpu: 0, entity: dcgmFEGPUCI, field: dcgmFieldXID, fieldType: dcgmTypeInt64, ts: 3 * sec, i: 43})
				return dcgm(nil)(t)
			}},
	}
}

// TestGoldenScenarios compares each scenario's metrics with its golden file (go test -update
// rewrites them).
func TestGoldenScenarios(t *testing.T) {
	for _, sc := range goldenScenarios() {
		t.Run(sc.name, func(t *testing.T) { runGolden(t, sc, *update) })
	}
}

func runGolden(t *testing.T, sc goldenScenario, write bool) {
	s := sc.setup(t)
	start := s.now()
	require.NoError(t, s.start(context.Background(), nil))
	defer func() { require.NoError(t, s.shutdown(context.Background())) }()
	var md pmetric.Metrics
	for i := 0; i < sc.scrapes; i++ {
		sc.before(i)
		setClock(s, start.Add(time.Duration(i+1)*10*time.Second))
		md = scrapeOnce(t, s)
	}
	compareGolden(t, filepath.Join("testdata", "expected_metrics", sc.name+".yaml"), md, write)
}

// setClock moves the scraper's injected clock.
func setClock(s *gpuScraper, t time.Time) { s.now = func() time.Time { return t } }

func compareGolden(t *testing.T, file string, md pmetric.Metrics, write bool) {
	t.Helper()
	if write {
		require.NoError(t, golden.WriteMetrics(t, file, md, golden.SkipMetricTimestampNormalization()))
	}
	want, err := golden.ReadMetrics(file)
	require.NoError(t, err, "go test -run TestGoldenScenarios -update writes it")
	require.NoError(t, pmetrictest.CompareMetrics(want, md,
		pmetrictest.IgnoreMetricsOrder(), pmetrictest.IgnoreMetricDataPointsOrder()))
}

// replayFixture is a recording of the dcgm_h100 scenario: the mdatagen lifecycle tests replay it
// (metadata.yaml tests: config:), so that they never load the host's GPU libraries.
var replayFixture = filepath.Join("testdata", "replay", "dcgm_h100.jsonl")

// TestReplayFixture replays testdata/replay/dcgm_h100.jsonl on the clock it was recorded on: the
// metrics are the live scenario's golden file, start times and timestamps included. -update
// records it again from the fake.
func TestReplayFixture(t *testing.T) {
	live := goldenScenarios()[0]
	require.Equal(t, "dcgm_h100", live.name)
	if *update {
		require.NoError(t, os.Remove(replayFixture))
		record := live
		record.setup = func(t *testing.T) *gpuScraper {
			s := live.setup(t)
			s.cfg.Recording.Write = replayFixture
			return s
		}
		runGolden(t, record, false)
	}
	runGolden(t, goldenScenario{name: live.name, scrapes: live.scrapes, before: func(int) {},
		setup: func(t *testing.T) *gpuScraper {
			cfg := createDefaultConfig().(*Config)
			cfg.Recording.Replay = replayFixture
			require.NoError(t, cfg.Validate())
			s := newPatientScraper(cfg, receivertest.NewNopSettings(metadata.Type))
			setClock(s, time.Unix(1_800_000_000, 0))
			return s
		}}, false)
}

package gpureceiver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver/internal/metadata"
)

// BenchmarkScrape measures one scrape of an 8-GPU node with every metric enabled, through the DCGM
// source logic and the pure-Go fake: per scrape, ten 1 s samples of the four PCIe and NVLink rate
// fields per GPU (the default sample_interval at the default 10 s collection interval) and the
// latest value of every other field. The cost of go-dcgm's own conversions (a 4 KiB union per
// value) is in BenchmarkScrapeLibDCGM.
func BenchmarkScrape(b *testing.B) {
	const gpus, samples = 8, 10
	f := newFakeDCGM(gpus)
	rates := []uint16{dcgmFieldPCIeTxRate, dcgmFieldPCIeRxRate, dcgmFieldNVLinkTxRate, dcgmFieldNVLinkRxRate}
	for g := uint(0); g < gpus; g++ {
		for _, fid := range rates {
			for k := int64(1); k <= samples; k++ {
				f.addSample(g, fid, k*sec, 25_000_000_000)
			}
		}
		for _, fid := range []uint16{dcgmFieldGPUUtil, dcgmFieldMemCopyUtil, dcgmFieldPCIeReplay, dcgmFieldPCIeGen, dcgmFieldPCIeWidth, dcgmFieldPCIeMaxGen, dcgmFieldPCIeMaxWidth} {
			f.setInt(g, fid, 4)
		}
		for _, fid := range []uint16{dcgmFieldDRAMActive, dcgmFieldSMActive, dcgmFieldGREngineActive} {
			f.setDouble(g, fid, 0.5)
		}
	}
	cfg := createDefaultConfig().(*Config)
	s := newPatientScraper(cfg, receivertest.NewNopSettings(metadata.Type))
	s.live = func(cfg *Config, _ *zap.Logger, want quantitySet, numa func(string) int64) (source, error) {
		return openDCGM(f, cfg, s.logger, want, numa)
	}
	clock := &testClock{t: time.Unix(1_800_000_000, 0)}
	s.now = clock.now
	ctx := context.Background()
	require.NoError(b, s.start(ctx, nil))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// The next ten seconds of samples.
		for j := range f.history {
			f.history[j].ts += samples * sec
		}
		clock.t = clock.t.Add(10 * time.Second)
		m, err := s.scrape(ctx)
		if err != nil || m.DataPointCount() < gpus*4 {
			b.Fatalf("scrape: %v, %d points", err, m.DataPointCount())
		}
	}
}

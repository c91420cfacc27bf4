package rnicreceiver

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// benchBurstScraper is a scraper with the fast sampler on (its goroutine idle: the benchmark
// drives the passes) over root, after the discovery scrape.
func benchBurstScraper(b *testing.B, root string, include []string) *rnicScraper {
	ticks := make(chan time.Time)
	s, _ := newTestScraperWith(b, root, func(cfg *Config) {
		cfg.Include.Devices = include
		cfg.CollectionInterval = time.Second
		cfg.Bursts.Period = 10 * time.Millisecond
	}, func(s *rnicScraper) {
		s.newBurstTicker = func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }
	})
	if _, err := s.scrape(context.Background()); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkBurstRead is one read of each kind of byte counter the fast sampler reads, with a
// descriptor kept open as the sampler keeps it (pread at offset 0): the PMA data counter
// (counters/port_xmit_data of the benchmark node's mlx5, drivers/infiniband/core/sysfs.c
// show_pma_counter), a driver byte counter (EFA's hw_counters/tx_bytes of testdata/fleet/efa,
// efa_verbs.c EFA_DEFINE_PORT_STATS) and the netdev's statistics/tx_bytes (net/core/net-sysfs.c).
// Here each is a file in a tmpfs or page cache; on an mlx5 the PMA read is a firmware command
// (mad.c process_pma_cmd), which `make device-check` measures where one is.
func BenchmarkBurstRead(b *testing.B) {
	bench := b.TempDir()
	if err := testfs.WriteRDMANode(bench, testfs.BenchRDMANode()); err != nil {
		b.Fatal(err)
	}
	efa := filepath.Join("testdata", "fleet", "efa")
	for _, bc := range []struct {
		name, root, device, file string
	}{
		{"pma_data", bench, "mlx5_0", "counters/port_xmit_data"},
		{"hw_counters_bytes", efa, "rdmap79s0", "hw_counters/tx_bytes"},
		{"netdev_bytes", bench, "mlx5_0", "statistics/tx_bytes"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := benchBurstScraper(b, bc.root, []string{bc.device})
			var target *burstTarget
			for _, t := range s.bursts.targets {
				if filepath.Base(t.paths[0]) == filepath.Base(bc.file) && t.direction.String() == "transmit" {
					target = t
				}
			}
			if target == nil {
				b.Fatalf("no %s target on %s", bc.file, bc.device)
			}
			s.bursts.shutdown()
			r := s.bursts.reader
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.ReadUintKept(target.paths[0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBurstPass is one pass of the fast sampler over the benchmark node (8 mlx5 RoCE ports:
// 16 PMA data counters and 16 netdev byte counters), read and folded; cpu-share@10ms is the
// share of one core (%core@10ms) a 10 ms period costs at this pass time (ns/op / 10 ms), the goroutine's
// wakeups not included (`make bench-overhead` measures the whole process).
func BenchmarkBurstPass(b *testing.B) {
	root := b.TempDir()
	if err := testfs.WriteRDMANode(root, testfs.BenchRDMANode()); err != nil {
		b.Fatal(err)
	}
	s := benchBurstScraper(b, root, nil)
	bs := s.bursts
	if len(bs.targets) != 32 {
		b.Fatalf("%d targets, want 32", len(bs.targets))
	}
	bs.shutdown()
	at := testEpoch
	bs.clock = func() time.Time { at = at.Add(10 * time.Millisecond); return at }
	b.ReportAllocs()
	for b.Loop() {
		bs.pass(bs.targets)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64((10*time.Millisecond).Nanoseconds())*100, "%core@10ms")
}

package rnicreceiver

import (
	"context"
	"fmt"
	"testing"

	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// BenchmarkScrape measures one scrape of the benchmark node (testfs.BenchRDMANode: 8 mlx5 RoCE
// devices of one port each, the node tools/cmd/bench-compare points node_exporter and the collector at)
// with the default configuration but ethtool off (its cost is the driver's, not ours). files/op is
// the number of sysfs files read (each one show() call on a real node), opens/op the number of
// them opened: the files read on every scrape stay open and are read again with pread.
//
//   - full: every counter on every scrape (slow_interval: 0), what the receiver reads on the first
//     scrape and every slow_interval;
//   - between_slow: a scrape between two reads of the slow counters (errors, transport events);
//   - default_1s: the mix at a 1 s collection interval with the default 10 s slow_interval, one
//     full scrape in 10.
func BenchmarkScrape(b *testing.B) {
	for _, bc := range []struct {
		name      string
		slowEvery int // force a full scrape every slowEvery iterations; 1: always, 0: never
	}{{"full", 1}, {"between_slow", 0}, {"default_1s", 10}} {
		b.Run(bc.name, func(b *testing.B) {
			root := b.TempDir()
			if err := testfs.WriteRDMANode(root, testfs.BenchRDMANode()); err != nil {
				b.Fatal(err)
			}
			s, _ := newTestScraper(b, root, nil)
			if _, err := s.scrape(context.Background()); err != nil { // discovery
				b.Fatal(err)
			}
			if len(s.plan.ports) != 8 {
				b.Fatalf("found %d ports, want 8", len(s.plan.ports))
			}
			reads, opens := s.reader.Reads(), s.reader.Opened()
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				if bc.slowEvery > 0 && i%bc.slowEvery == 0 {
					s.slowAt = s.slowAt.Add(-s.cfg.SlowInterval)
				}
				i++
				if _, err := s.scrape(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(s.reader.Reads()-reads)/float64(b.N), "files/op")
			b.ReportMetric(float64(s.reader.Opened()-opens)/float64(b.N), "opens/op")
		})
	}
}

// BenchmarkScrapePorts: one full scrape (every counter, as on the first scrape and every
// slow_interval) at 100, 400 and 1600 ports; ns/op per port stays flat (linear scaling), and
// kept-files is the number of descriptors held between scrapes (capped by maxKeptFiles).
func BenchmarkScrapePorts(b *testing.B) {
	for _, n := range []int{100, 400, 1600} {
		b.Run(fmt.Sprintf("ports=%d", n), func(b *testing.B) {
			root := b.TempDir()
			if err := testfs.WriteRDMANode(root, testfs.ScaleRDMANode(n)); err != nil {
				b.Fatal(err)
			}
			s, _ := newTestScraper(b, root, func(cfg *Config) {
				cfg.SlowInterval = 0
				cfg.Topology.Enabled = false
			})
			if _, err := s.scrape(context.Background()); err != nil { // discovery
				b.Fatal(err)
			}
			if len(s.plan.ports) != n {
				b.Fatalf("found %d ports, want %d", len(s.plan.ports), n)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := s.scrape(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/port")
			b.ReportMetric(float64(s.keptFiles()), "kept-files")
		})
	}
}

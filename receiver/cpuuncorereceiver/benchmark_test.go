package cpuuncorereceiver

import (
	"testing"
	"time"
)

// BenchmarkScrape measures one scrape of a two-socket host (testdata fixtures) with the fake
// counter source: the receiver's own cost per scrape. syscalls/op counts the read(2) calls the
// real source would make (one per counter group: PERF_FORMAT_GROUP); sysfs-files/op must stay
// 0, discovery being off the scrape path. The real read(2) cost is measured by
// internal/perf BenchmarkGroupRead.
//
//	go test -run '^$' -bench BenchmarkScrape -benchmem ./receiver/cpuuncorereceiver/
func BenchmarkScrape(b *testing.B) {
	for _, bc := range []struct {
		name    string
		fixture string
		edit    func(*Config)
	}{
		{"skx/socket+stack", "skx", nil},
		{"skx/controller+port", "skx", func(c *Config) {
			c.Memory.Granularity = GranularityController
			c.PCIe.Granularity = GranularityPort
		}},
		{"spr/socket+stack", "spr", nil},
		{"zen4/socket", "zen4", nil},
		{"gb200/socket+stack", "gb200", nil},
		{"gb200/socket+port", "gb200", func(c *Config) { c.PCIe.Granularity = GranularityPort }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ts := newTestScraper(b, bc.fixture, bc.edit)
			ts.fake.add(0, skxIMC0, skxCASRead, 1)
			files0, reads0 := ts.reader.Opened(), ts.fake.reads
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ts.tick(5 * time.Second)
				md, err := ts.scrape(b.Context())
				if err != nil || md.DataPointCount() == 0 {
					b.Fatalf("scrape: %v, %d points", err, md.DataPointCount())
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(ts.fake.reads-reads0)/float64(b.N), "syscalls/op")
			b.ReportMetric(float64(ts.reader.Opened()-files0)/float64(b.N), "sysfs-files/op")
			b.ReportMetric(float64(len(ts.plan.aggs)), "series")
		})
	}
}

package rnicreceiver

import (
	"context"
	"fmt"
	"testing"
)

// benchNode is the benchmark's node: 8 mlx5 RoCE devices of one port each, laid out like
// mlx5_bond_0 of the synthetic fixture (21 PMA counters, telegraf's 28 hw_counters), each with its
// own netdev, on two sockets.
func benchNode() []fxDevice {
	tmpl := syntheticNode()[0]
	var devs []fxDevice
	for i := range 8 {
		d := tmpl
		d.name = fmt.Sprintf("mlx5_%d", i)
		d.pciPath = fmt.Sprintf("pci0000:%02x/0000:%02x:00.0/0000:%02x:00.0", 0x10*i, 0x10*i, 0x10*i+1)
		d.numa = fmt.Sprint(i / 4)
		nd := fmt.Sprintf("ens%dnp0", i)
		p := tmpl.ports[0]
		p.ndevs = map[int]string{0: nd}
		d.ports = []fxPort{p}
		d.netdevs = []fxNetdev{{name: nd, tx: 1, rx: 2}}
		devs = append(devs, d)
	}
	return devs
}

// BenchmarkScrape measures one scrape of the 8-device node with the default configuration
// (ethtool off: its cost is the driver's, not ours). files/op is the number of sysfs files opened.
func BenchmarkScrape(b *testing.B) {
	root := b.TempDir()
	writeNode(b, root, benchNode())
	s, _ := newTestScraper(b, root, nil)
	if _, err := s.scrape(context.Background()); err != nil { // discovery
		b.Fatal(err)
	}
	if len(s.ports) != 8 {
		b.Fatalf("found %d ports, want 8", len(s.ports))
	}
	before := s.reader.Opened()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.scrape(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(s.reader.Opened()-before)/float64(b.N), "files/op")
}

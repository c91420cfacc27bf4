package ncclreceiver

import (
	"testing"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// BenchmarkRecord is the cost of one Inspector record from its line to its series: decoding
// (parseRecord) and aggregating (aggregator.add) on a node with 8 communicators.
//
//	go test -run '^$' -bench BenchmarkRecord -benchmem ./receiver/ncclreceiver/
func BenchmarkRecord(b *testing.B) {
	var lines [][]byte
	for c := 0; c < 8; c++ {
		op := allReduce("0x7f8c496ae9f66"+string(rune('0'+c)), c, 1000+c, 1, 64<<20, 900)
		lines = append(lines, []byte(testfs.InspectorLine(op)))
	}
	a := newAggregator(256, 0, nil)
	now := time.Unix(0, 0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		r, err := parseRecord(lines[i%len(lines)])
		if err != nil {
			b.Fatal(err)
		}
		r.sn = uint64(i)
		a.add(r, now)
	}
}

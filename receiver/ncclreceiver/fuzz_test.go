package ncclreceiver

import (
	"math"
	"testing"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// FuzzParseRecord feeds arbitrary lines to the record parser and the aggregator: no line may
// panic, and a record that is accepted is one a series can hold (a rank inside its communicator,
// a size and a duration that are numbers).
//
//	go test -run '^$' -fuzz FuzzParseRecord -fuzztime 30s ./receiver/ncclreceiver/
func FuzzParseRecord(f *testing.F) {
	op := allReduce(comm, 2, 1639453, 1407, 17179869184, 61974)
	f.Add([]byte(testfs.InspectorLine(op)))
	op.P2P, op.Op, op.CommName = true, "Recv", "PP Group 1"
	f.Add([]byte(testfs.InspectorLine(op)))
	f.Add([]byte(`{"header":{"id":"0x1","rank":1,"n_ranks":2},"metadata":{"inspector_output_format_version":"v5.0"},"coll_perf":{"coll":"AllReduce","coll_msg_size_bytes":1e300,"coll_exec_time_us":"nan"}}`))
	f.Add([]byte(`{"header":null,"metadata":{"inspector_output_format_version":"v4"}}`))
	a := newAggregator(8, time.Minute, nil)
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := parseRecord(line)
		if err != nil {
			return
		}
		if r.rank < 0 || r.rank >= r.nranks || math.IsNaN(r.execUs) || r.execUs < 0 {
			t.Fatalf("accepted a record no series can hold: %+v", r)
		}
		a.add(r, time.Unix(0, 0))
	})
}

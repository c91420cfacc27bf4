package ncclreceiver

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// TestParseRecordFormats reads the record layouts NVIDIA/nccl writes: 2.28's (ext-profiler/
// inspector/inspector.cc inspectorCommInfoDump: no comm_name), 2.30's (plugins/profiler/
// inspector/inspector_json.cc: comm_name, p2p_perf records), the README's verbose example
// (event_trace_sn / event_trace_ts, ignored), numbers written as integers where the writer has
// doubles and the other way round, and jsonDouble's "nan" (json.cc jsonDouble).
func TestParseRecordFormats(t *testing.T) {
	base := allReduce("0x7f8c496ae9f661", 2, 1639453, 1407, 17179869184, 61974)
	named := base
	named.CommName = "DP Group 0"
	p2p := base
	p2p.P2P, p2p.Op, p2p.MsgBytes = true, "Send", 536870912
	v51 := base
	v51.Version = "v5.1"
	spread := base
	spread.NNodes = 4

	cases := map[string]struct {
		line                   string
		op, name, version      string
		bytes                  uint64
		exec, busbw            float64
		sn                     uint64
		rank, nranks, pid      int64
		nnodes                 int64 // 1 where unset: every line but "4 nodes" says 1
		wantErr, wantErrSubstr string
	}{
		"2.28 coll_perf": {line: testfs.InspectorLine(base), op: "AllReduce", name: "unknown", version: "v4.0",
			bytes: 17179869184, exec: 61974, busbw: base.BusBw, sn: 1407, rank: 2, nranks: 8, pid: 1639453},
		"2.30 comm_name": {line: testfs.InspectorLine(named), op: "AllReduce", name: "DP Group 0", version: "v4.0",
			bytes: 17179869184, exec: 61974, busbw: base.BusBw, sn: 1407, rank: 2, nranks: 8, pid: 1639453},
		"2.30 p2p_perf": {line: testfs.InspectorLine(p2p), op: "Send", name: "unknown", version: "v4.0",
			bytes: 536870912, exec: 61974, busbw: base.BusBw, sn: 1407, rank: 2, nranks: 8, pid: 1639453},
		"v5.1": {line: testfs.InspectorLine(v51), op: "AllReduce", name: "unknown", version: "v5.1",
			bytes: 17179869184, exec: 61974, busbw: base.BusBw, sn: 1407, rank: 2, nranks: 8, pid: 1639453},
		// The communicator's nodes (header nnodes), which tells one within a node from one across.
		"4 nodes": {line: testfs.InspectorLine(spread), op: "AllReduce", name: "unknown", version: "v4.0",
			bytes: 17179869184, exec: 61974, busbw: base.BusBw, sn: 1407, rank: 2, nranks: 8, pid: 1639453, nnodes: 4},
		// The README's verbose example (NCCL_INSPECTOR_DUMP_VERBOSE=1), on one line as written.
		"verbose": {line: `{"header":{"id":"0xe62dedaa97644a","rank":4,"n_ranks":8,"nnodes":1},"metadata":{"inspector_output_format_version":"v4.0","git_rev":"9019a1912-dirty","rec_mechanism":"nccl_profiler_interface","dump_timestamp_us":1752867229276385,"hostname":"example-hostname","pid":438776},"coll_perf":{"coll":"ReduceScatter","coll_sn":1231,"coll_msg_size_bytes":2147483648,"coll_exec_time_us":41057,"coll_timing_source":"kernel_gpu","coll_algobw_gbs":418.439467,"coll_busbw_gbs":366.134533,"event_trace_sn":{"coll_start_sn":1,"coll_stop_sn":2,"kernel_events":[{"channel_id":0,"kernel_start_sn":3,"kernel_stop_sn":48,"kernel_record_sn":47}]},"event_trace_ts":{"coll_start_ts":1752867229235059,"coll_stop_ts":1752867229235064,"kernel_events":[{"channel_id":0,"kernel_start_ts":1752867229235181,"kernel_stop_ts":1752867229275811,"kernel_record_ts":1752867229275811}]}}}`,
			op: "ReduceScatter", name: "unknown", version: "v4.0", bytes: 2147483648, exec: 41057, busbw: 366.134533, sn: 1231, rank: 4, nranks: 8, pid: 438776},
		"floats and integers swapped, fields added": {line: `{"header":{"id":"0x1","rank":0.0,"n_ranks":2,"nnodes":1},"metadata":{"inspector_output_format_version":"v4.3","hostname":"h","pid":7,"dump_timestamp_us":1.5e15},"coll_perf":{"coll":"AllGather","coll_sn":3,"coll_msg_size_bytes":1048576.0,"coll_exec_time_us":12.5,"coll_busbw_gbs":40,"coll_algo":"RING","coll_proto":"SIMPLE"}}`,
			op: "AllGather", name: "unknown", version: "v4.3", bytes: 1048576, exec: 12.5, busbw: 40, sn: 3, rank: 0, nranks: 2, pid: 7},
		"nan bus bandwidth": {line: `{"header":{"id":"0x1","rank":1,"n_ranks":2,"nnodes":1},"metadata":{"inspector_output_format_version":"v4.0","hostname":"h","pid":7},"coll_perf":{"coll":"AllReduce","coll_sn":4,"coll_msg_size_bytes":65536,"coll_exec_time_us":0,"coll_algobw_gbs":"nan","coll_busbw_gbs":"nan"}}`,
			op: "AllReduce", name: "unknown", version: "v4.0", bytes: 65536, exec: 0, busbw: math.NaN(), sn: 4, rank: 1, nranks: 2, pid: 7},

		"future major":    {line: strings.Replace(testfs.InspectorLine(base), `"v4.0"`, `"v6.0"`, 1), wantErr: "version"},
		"no version":      {line: `{"header":{"id":"0x1","rank":0,"n_ranks":1},"metadata":{"hostname":"h"},"coll_perf":{"coll":"AllReduce"}}`, wantErr: "version"},
		"garbage":         {line: `{"header":{"id":"0x1",` + "\x00\xff", wantErrSubstr: "not a JSON object"},
		"rank past comm":  {line: strings.Replace(testfs.InspectorLine(base), `"rank":2`, `"rank":8`, 1), wantErrSubstr: "header: rank 8 of n_ranks 8"},
		"size not number": {line: strings.Replace(testfs.InspectorLine(base), `17179869184`, `"big"`, 1), wantErrSubstr: "not a number"},
		"other record kind": {line: `{"header":{"id":"0x1","rank":0,"n_ranks":1,"nnodes":1},"metadata":{"inspector_output_format_version":"v5.0","hostname":"h","pid":1},"dump_stats":{"coll_dropped":3}}`,
			wantErr: "kind"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := parseRecord([]byte(strings.TrimSuffix(c.line, "\n")))
			switch {
			case c.wantErr == "version":
				require.ErrorIs(t, err, errUnsupportedVersion)
				return
			case c.wantErr == "kind":
				require.ErrorIs(t, err, errNotAnOperation)
				return
			case c.wantErrSubstr != "":
				require.ErrorContains(t, err, c.wantErrSubstr)
				assert.False(t, errors.Is(err, errUnsupportedVersion))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.op, r.op)
			assert.Equal(t, c.name, r.commName)
			assert.Equal(t, c.version, r.version)
			assert.Equal(t, c.bytes, r.msgBytes)
			assert.InDelta(t, c.exec, r.execUs, 1e-9)
			if math.IsNaN(c.busbw) {
				assert.True(t, math.IsNaN(r.busBwGBs))
			} else {
				assert.InDelta(t, c.busbw, r.busBwGBs, 1e-6) // %lf keeps six decimals
			}
			assert.Equal(t, c.sn, r.sn)
			assert.Equal(t, c.rank, r.rank)
			assert.Equal(t, c.nranks, r.nranks)
			assert.Equal(t, c.pid, r.pid)
			if c.nnodes == 0 {
				c.nnodes = 1
			}
			assert.Equal(t, c.nnodes, r.nnodes)
		})
	}
}

// TestSizeBuckets checks the bucket edges: 64 KiB opens the second bucket, each bucket is a
// factor of four, and the sizes nccl-tests sweeps (-b 8 -e 16G -f 2) fall into at most ten.
func TestSizeBuckets(t *testing.T) {
	assert.Equal(t, "<64KiB", sizeBucket(0))
	assert.Equal(t, "<64KiB", sizeBucket(65535))
	assert.Equal(t, "64KiB-256KiB", sizeBucket(65536))
	assert.Equal(t, "64KiB-256KiB", sizeBucket(262143))
	assert.Equal(t, "256KiB-1MiB", sizeBucket(262144))
	assert.Equal(t, "16MiB-64MiB", sizeBucket(32<<20))
	assert.Equal(t, "1GiB-4GiB", sizeBucket(4<<30-1))
	assert.Equal(t, ">=4GiB", sizeBucket(4<<30))
	assert.Equal(t, ">=4GiB", sizeBucket(16<<30))
	seen := map[string]bool{}
	for n := uint64(8); n <= 16<<30; n *= 2 {
		seen[sizeBucket(n)] = true
	}
	assert.Len(t, seen, len(sizeBuckets))
}

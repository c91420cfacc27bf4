package ncclreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/ncclreceiver"

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// An Inspector record as plugins/profiler/inspector writes it (NVIDIA/nccl, inspector_json.cc,
// inspectorCommInfoDumpColl / inspectorCommInfoDumpP2p; ext-profiler/inspector/inspector.cc in
// 2.28): one JSON object per line (jsonFinishObject then jsonNewline), with a "header" (the
// communicator: inspectorCommInfoHeader), a "metadata" (inspectorCommInfoMetaHeader) and one of
// "coll_perf" (inspectorCompletedColl) or "p2p_perf" (inspectorCompletedP2p, 2.30+).
type inspectorLine struct {
	Header   *inspectorHeader   `json:"header"`
	Metadata *inspectorMetadata `json:"metadata"`
	CollPerf *inspectorOp       `json:"coll_perf"`
	P2PPerf  *inspectorOp       `json:"p2p_perf"`
}

type inspectorHeader struct {
	ID       string     `json:"id"`        // jsonStr(commHashStr): "0x%lx"
	CommName string     `json:"comm_name"` // 2.30+; "unknown" when the communicator has none
	Rank     jsonNumber `json:"rank"`      // jsonInt
	NRanks   jsonNumber `json:"n_ranks"`   // jsonInt
	NNodes   jsonNumber `json:"nnodes"`    // jsonUint64
}

type inspectorMetadata struct {
	Version         string     `json:"inspector_output_format_version"` // "v4.0" in 2.28 to 2.31
	DumpTimestampUs jsonNumber `json:"dump_timestamp_us"`
	Hostname        string     `json:"hostname"`
	PID             jsonNumber `json:"pid"` // jsonUint64(getpid())
}

// inspectorOp holds the fields of coll_perf and of p2p_perf (whose keys carry a p2p_ prefix).
type inspectorOp struct {
	Op        string     `json:"coll"`
	MsgBytes  jsonNumber `json:"coll_msg_size_bytes"`
	ExecUs    jsonNumber `json:"coll_exec_time_us"`
	BusBwGBs  jsonNumber `json:"coll_busbw_gbs"`
	AlgoBwGBs jsonNumber `json:"coll_algobw_gbs"`
	SN        jsonNumber `json:"coll_sn"`

	P2POp        string     `json:"p2p"`
	P2PMsgBytes  jsonNumber `json:"p2p_msg_size_bytes"`
	P2PExecUs    jsonNumber `json:"p2p_exec_time_us"`
	P2PBusBwGBs  jsonNumber `json:"p2p_busbw_gbs"`
	P2PAlgoBwGBs jsonNumber `json:"p2p_algobw_gbs"`
	P2PSN        jsonNumber `json:"p2p_sn"`
}

// jsonNumber accepts what the Inspector's json.cc prints for a number: an integer (jsonInt,
// jsonUint64: "%d", "%lu"), a decimal (jsonDouble: "%lf"), or the string "nan" that jsonDouble
// writes for a NaN; a number written as a string by a later writer is read as well.
type jsonNumber struct {
	set bool
	v   float64
}

func (n *jsonNumber) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if strings.EqualFold(s, "nan") {
			n.set, n.v = true, math.NaN()
			return nil
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return fmt.Errorf("not a number, got %s", b)
	}
	n.set, n.v = true, v
	return nil
}

// errUnsupportedVersion marks a record in a format this receiver does not read.
var errUnsupportedVersion = errors.New("unsupported inspector_output_format_version")

// errNotAnOperation marks a well-formed record of a kind this receiver does not aggregate
// (a record kind added by a later Inspector).
var errNotAnOperation = errors.New("no coll_perf or p2p_perf")

// record is one Inspector operation, decoded and checked.
type record struct {
	version  string
	hostname string
	pid      int64
	commID   string
	commName string
	rank     int64
	nranks   int64
	// nnodes is the header's nnodes: the nodes the communicator spans, 0 where it is absent.
	nnodes   int64
	op       string
	sn       uint64
	hasSN    bool
	msgBytes uint64
	execUs   float64
	busBwGBs float64 // NaN when the Inspector could not compute it
}

// supportedVersion reports whether v is a format version this receiver reads: v4.x (every NCCL
// release that ships the Inspector writes "v4.0") and v5.x (the profiler interface v5 that the
// Inspector's Prometheus mode already names its output after, inspector_prom.cc
// inspectorPromGetVersion). Minor versions add fields; a new major may change their meaning.
func supportedVersion(v string) bool {
	major, _, _ := strings.Cut(strings.TrimPrefix(v, "v"), ".")
	return strings.HasPrefix(v, "v") && (major == "4" || major == "5")
}

// parseRecord decodes one line. Unknown keys are ignored (later versions add fields).
func parseRecord(line []byte) (record, error) {
	var l inspectorLine
	if err := json.Unmarshal(line, &l); err != nil {
		return record{}, fmt.Errorf("not a JSON object: %w", err)
	}
	if l.Metadata == nil {
		return record{}, errors.New("metadata: missing")
	}
	if !supportedVersion(l.Metadata.Version) {
		return record{}, fmt.Errorf("%w: metadata.inspector_output_format_version: want v4.x or v5.x, got %q", errUnsupportedVersion, l.Metadata.Version)
	}
	if l.Header == nil || l.Header.ID == "" {
		return record{}, errors.New("header.id: missing")
	}
	r := record{
		version:  l.Metadata.Version,
		hostname: l.Metadata.Hostname,
		pid:      int64(l.Metadata.PID.v),
		commID:   l.Header.ID,
		commName: l.Header.CommName,
		rank:     int64(l.Header.Rank.v),
		nranks:   int64(l.Header.NRanks.v),
		nnodes:   int64(l.Header.NNodes.v),
	}
	if r.commName == "" {
		r.commName = "unknown" // what 2.30+ writes for a communicator without a name
	}
	if !l.Header.Rank.set || !l.Header.NRanks.set || r.nranks <= 0 || r.rank < 0 || r.rank >= r.nranks {
		return record{}, fmt.Errorf("header: rank %v of n_ranks %v is not a rank", l.Header.Rank.v, l.Header.NRanks.v)
	}
	var size, exec, busbw, sn jsonNumber
	switch {
	case l.CollPerf != nil:
		c := l.CollPerf
		r.op, size, exec, busbw, sn = c.Op, c.MsgBytes, c.ExecUs, c.BusBwGBs, c.SN
	case l.P2PPerf != nil:
		p := l.P2PPerf
		r.op, size, exec, busbw, sn = p.P2POp, p.P2PMsgBytes, p.P2PExecUs, p.P2PBusBwGBs, p.P2PSN
	default:
		return record{}, errNotAnOperation
	}
	if r.op == "" {
		return record{}, errors.New("coll: missing")
	}
	if !size.set || size.v < 0 || math.IsNaN(size.v) {
		return record{}, fmt.Errorf("coll_msg_size_bytes: not a size, got %v", size.v)
	}
	if !exec.set || exec.v < 0 || math.IsNaN(exec.v) {
		return record{}, fmt.Errorf("coll_exec_time_us: not a duration, got %v", exec.v)
	}
	r.msgBytes = uint64(size.v)
	r.execUs = exec.v
	r.busBwGBs = math.NaN()
	if busbw.set && busbw.v >= 0 {
		r.busBwGBs = busbw.v
	}
	if sn.set && sn.v >= 0 {
		r.sn, r.hasSN = uint64(sn.v), true
	}
	return r, nil
}

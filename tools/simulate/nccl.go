package simulate

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/internal/fakeras"
	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// The simulated job's NCCL side is the model's (internal/scenario nccl.go: one communicator of
// scenario.GPUs ranks, one rank a node, each step's gradients AllReduced in scenario.OpsPerStep
// operations of scenario.MessageBytes, a Broadcast from node1 in healthy_broadcast), written as the
// NCCL Inspector and the RAS service give it. The Inspector computes bus bandwidth as algorithm
// bandwidth times the collective's factor (scenario.BusBwFactor).

// NCCLCases are the cases whose NCCL job the simulator writes: every case of scenario.Cases with
// the collective its job runs, and scenario.NCCLCases.
func NCCLCases() []scenario.Case {
	var out []scenario.Case
	for _, c := range scenario.Cases() {
		out = append(out, c.WithNCCL(ncclCollective(c)))
	}
	return append(out, scenario.NCCLCases()...)
}

// ncclCollective is the collective a case's job runs.
func ncclCollective(c scenario.Case) string {
	if strings.Contains(c.Name, "broadcast") {
		return "Broadcast"
	}
	return "AllReduce"
}

// commID is the case's communicator hash, as the Inspector and RAS print it.
func commID(c scenario.Case) string { return scenario.CommID(c) }

// InspectorDump returns node n's Inspector dump over samples of interval, in the 2.28 model
// (ext-profiler/inspector/inspector.cc inspectorCommInfoDump): at each dump the latest operation
// completed since the previous dump, none when no operation completed.
func InspectorDump(c scenario.Case, n, samples int, interval time.Duration, start time.Time) string {
	var b strings.Builder
	run := c.NCCLRun(n, interval.Seconds())
	for i := 0; i < samples; i++ {
		b.WriteString(inspectorRecord(c, n, run.Next(i), start.Add(time.Duration(i)*interval)))
	}
	return b.String()
}

// inspectorRecord is node n's Inspector line for a sample dumped at at, "" when no operation
// completed in it.
func inspectorRecord(c scenario.Case, n int, s scenario.NCCLSample, at time.Time) string {
	if !s.Record {
		return ""
	}
	op := s.Job.Op
	busbw := s.BusBandwidth / 1e9
	return testfs.InspectorLine(testfs.InspectorOp{
		CommID: commID(c), Rank: n, NRanks: scenario.GPUs, NNodes: scenario.GPUs,
		Hostname: scenario.HostName(c, scenario.Nodes[n]), PID: scenario.NCCLPIDBase + n,
		DumpUs: uint64(at.UnixMicro()),
		Op:     op, SN: s.Ops[n], MsgBytes: uint64(scenario.MessageBytes), ExecUs: uint64(s.TransferSeconds * 1e6),
		AlgoBw: busbw / scenario.BusBwFactor(op, scenario.GPUs), BusBw: busbw,
	})
}

// inspectorDumpName is the file inspector.cc inspectorStateDumpJSON writes node n's dumps to.
func inspectorDumpName(c scenario.Case, n int) string {
	return fmt.Sprintf("%s-pid%d.log", scenario.HostName(c, scenario.Nodes[n]), scenario.NCCLPIDBase+n)
}

// promSizeRange is the Inspector's Prometheus label of a message of n bytes
// (inspector_prom.cc inspectorPromFormatMessageSizeRange): the whole units below and above it in
// the largest binary unit under it, 5.2e9 bytes (4.84 GiB) "4-5GB".
func promSizeRange(n float64) string {
	units := []string{"B", "KB", "MB", "GB", "TB"}
	u := 0
	for n >= 1024 && u < len(units)-1 {
		n /= 1024
		u++
	}
	lo := math.Floor(n)
	return fmt.Sprintf("%.0f-%.0f%s", lo, lo+1, units[u])
}

// InspectorPromText returns node n's textfile (the Inspector's Prometheus mode, inspector_prom.cc)
// for the dump interval ending at sample i: the geometric mean of the interval's bus bandwidths and
// the mean execution time in the message's bucket, "" when no operation completed in it. The
// model's operations are alike within a sample, so both means are the sample's own values.
func InspectorPromText(c scenario.Case, n, i int, interval time.Duration) string {
	run := c.NCCLRun(n, interval.Seconds())
	var s scenario.NCCLSample
	for k := 0; k <= i; k++ {
		s = run.Next(k)
	}
	if !s.Record {
		return ""
	}
	return testfs.InspectorPromFile([]testfs.InspectorPromBucket{{
		Node: scenario.HostName(c, scenario.Nodes[n]), GPU: "GPU0", CommName: "unknown",
		NNodes: scenario.GPUs, NRanks: scenario.GPUs, Op: s.Job.Op,
		MessageSize: promSizeRange(scenario.MessageBytes),
		AlgoProto:   "Ring_simple", BusBw: s.BusBandwidth / 1e9, ExecUs: s.TransferSeconds * 1e6,
	}})
}

// RASStatus is the RAS STATUS document (JSON, NCCL 2.28.7+) a node of case c answers with at
// sample i: the job's communicator, its running ranks with their operation counts so far, and its
// dead ones under missing_ranks, dead (src/ras/client_support.cc jsonWriteMissingRank: a rank whose
// process is gone).
func RASStatus(c scenario.Case, i int, interval time.Duration) string {
	run := c.NCCLRun(0, interval.Seconds())
	var s scenario.NCCLSample
	for k := 0; k <= i; k++ {
		s = run.Next(k)
	}
	return rasStatusOf(c, s)
}

// rasStatusOf is the RAS STATUS document of case c's job at one of its samples.
func rasStatusOf(c scenario.Case, s scenario.NCCLSample) string {
	comm := fakeras.Comm{Hash: commID(c), Size: scenario.GPUs}
	for n, node := range scenario.Nodes {
		if n >= scenario.GPUs-s.Job.DeadRanks {
			comm.Ranks = append(comm.Ranks, fakeras.Rank{Rank: n, PID: scenario.NCCLPIDBase + n, Host: scenario.HostName(c, node), Missing: true, Dead: true})
			continue
		}
		comm.Ranks = append(comm.Ranks, fakeras.Rank{
			Rank: n, PID: scenario.NCCLPIDBase + n, CudaDev: 0, Host: scenario.HostName(c, node),
			Counts: map[string]uint64{s.Job.Op: s.Ops[n]},
		})
	}
	return fakeras.StatusJSON("2.28.7", []fakeras.Comm{comm})
}

// WriteNCCL writes each case's Inspector dumps, <dir>/<case>/nccl/<host>-pid<pid>.log (the name
// inspector.cc inspectorStateDumpJSON gives them), and returns the dump directories.
func WriteNCCL(o Options) ([]string, error) {
	if o.Interval <= 0 || o.Samples < 2 {
		return nil, fmt.Errorf("simulate: need an interval and at least 2 samples")
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	}
	var dirs []string
	for _, c := range NCCLCases() {
		dir := filepath.Join(o.Dir, c.Name, "nccl")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		for n := range scenario.Nodes {
			if err := os.WriteFile(filepath.Join(dir, inspectorDumpName(c, n)), []byte(InspectorDump(c, n, o.Samples, o.Interval, o.Start)), 0o644); err != nil {
				return nil, err
			}
		}
		dirs = append(dirs, dir)
	}
	return dirs, nil
}

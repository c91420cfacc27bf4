package testfs

import (
	"fmt"
	"strconv"
	"strings"
)

// InspectorOp is one completed operation as the NCCL Inspector profiler plugin dumps it.
type InspectorOp struct {
	CommID   string // header.id, "0x%lx" of the communicator hash
	CommName string // header.comm_name (2.30+); "" leaves the key out, as 2.28 does
	Rank     int
	NRanks   int
	NNodes   int
	Hostname string
	PID      int
	DumpUs   uint64 // metadata.dump_timestamp_us

	P2P      bool   // a p2p_perf record (2.30+) rather than coll_perf
	Op       string // ncclFuncToString: AllReduce, AllGather, ..., Send, Recv
	SN       uint64
	MsgBytes uint64
	ExecUs   uint64
	AlgoBw   float64 // GB/s
	BusBw    float64 // GB/s

	Version string // metadata.inspector_output_format_version; "" is v4.0
}

// InspectorLine formats op exactly as NVIDIA/nccl writes it (plugins/profiler/inspector/
// inspector_json.cc inspectorCommInfoDumpColl / inspectorCommInfoDumpP2p with json.cc): one
// object without spaces, keys in the writer's order, integers with %d/%lu, doubles with %lf (six
// decimals), the line ended by jsonNewline.
func InspectorLine(op InspectorOp) string {
	v := op.Version
	if v == "" {
		v = "v4.0"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `{"header":{"id":%q`, op.CommID)
	if op.CommName != "" {
		fmt.Fprintf(&b, `,"comm_name":%q`, op.CommName)
	}
	fmt.Fprintf(&b, `,"rank":%d,"n_ranks":%d,"nnodes":%d},`, op.Rank, op.NRanks, op.NNodes)
	fmt.Fprintf(&b, `"metadata":{"inspector_output_format_version":%q,"git_rev":"","rec_mechanism":"nccl_profiler_interface","dump_timestamp_us":%d,"hostname":%q,"pid":%d},`,
		v, op.DumpUs, op.Hostname, op.PID)
	p := "coll"
	if op.P2P {
		p = "p2p"
	}
	fmt.Fprintf(&b, `"%s_perf":{"%s":%q,"%s_sn":%d,`, p, p, op.Op, p, op.SN)
	if op.P2P {
		b.WriteString(`"p2p_peer":1,`)
	}
	fmt.Fprintf(&b, `"%s_msg_size_bytes":%d,"%s_exec_time_us":%d,"%s_timing_source":"kernel_gpu","%s_algobw_gbs":%f,"%s_busbw_gbs":%f}}`+"\n",
		p, op.MsgBytes, p, op.ExecUs, p, p, op.AlgoBw, p, op.BusBw)
	return b.String()
}

// NvidiaGPU is one GPU of the NVIDIA kernel module's procfs list.
type NvidiaGPU struct {
	BusID string // 0000:18:00.0
	UUID  string // GPU-...
	Model string
	Minor int
}

// NvidiaGPUs adds proc/driver/nvidia/gpus/<bus id>/information for each GPU, laid out as
// open-gpu-kernel-modules kernel-open/nvidia/nv-procfs.c nv_procfs_read_gpu_info prints it.
func (t *Tree) NvidiaGPUs(gpus []NvidiaGPU) {
	for _, g := range gpus {
		t.File("proc/driver/nvidia/gpus/"+g.BusID+"/information", fmt.Sprintf(
			"Model: \t\t %s\nIRQ:   \t\t 0\nGPU UUID: \t %s\nVideo BIOS: \t 96.00.99.00.01\nBus Type: \t PCIe\n"+
				"DMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\nBus Location: \t %s\nDevice Minor: \t %d\n",
			g.Model, g.UUID, g.BusID, g.Minor))
	}
}

// ProcEnviron adds proc/<pid>/environ: the variables NUL-terminated, as the kernel shows the
// process's initial environment (proc(5), fs/proc/base.c environ_read).
func (t *Tree) ProcEnviron(pid int, env []string) {
	var b strings.Builder
	for _, kv := range env {
		b.WriteString(kv)
		b.WriteByte(0)
	}
	t.File(fmt.Sprintf("proc/%d/environ", pid), b.String())
}

// HopperGPUs is an HGX H100 board's eight GPUs, in PCI order (the bus numbers of a Sapphire
// Rapids HGX: one GPU behind each of eight PCIe switches).
func HopperGPUs() []NvidiaGPU {
	buses := []string{"18", "2a", "3a", "5d", "9a", "ab", "ba", "db"}
	gpus := make([]NvidiaGPU, len(buses))
	for i, b := range buses {
		gpus[i] = NvidiaGPU{
			BusID: "0000:" + b + ":00.0",
			UUID:  fmt.Sprintf("GPU-%08x-1111-2222-3333-%012x", 0x5a000000+i, 0xabc000+i),
			Model: "NVIDIA H100 80GB HBM3",
			Minor: i,
		}
	}
	return gpus
}

// InspectorPromBucket is one bucket of the Inspector's Prometheus textfile mode.
type InspectorPromBucket struct {
	Node, GPU, CommName, SlurmJobID string
	NNodes, NRanks                  int
	P2P                             bool   // a P2P bucket: p2p_operation, no algo_proto
	Op                              string // collective or p2p_operation
	MessageSize                     string // inspectorPromFormatMessageSizeRange: "4-5GB"
	AlgoProto                       string // "Ring_ll"
	BusBw, ExecUs                   float64
}

// InspectorPromFile formats the buckets as the Inspector's textfile mode writes a GPU's file
// (plugins/profiler/inspector/inspector_prom.cc inspectorPromWriteCollBucket /
// inspectorPromWriteP2pBucket: two untyped samples a bucket, "%.6g", labels in
// inspectorPromGetLabelsColl's order, version "v<profiler interface>.<minor>" = v5.1).
func InspectorPromFile(buckets []InspectorPromBucket) string {
	var b strings.Builder
	for _, k := range buckets {
		job := k.SlurmJobID
		if job == "" {
			job = "unknown"
		}
		labels := fmt.Sprintf(`version="v5.1",slurm_job_id="%s",node="%s",gpu="%s",comm_name="%s",n_nodes="%d",nranks="%d",`,
			job, k.Node, k.GPU, k.CommName, k.NNodes, k.NRanks)
		bw, ex := "nccl_bus_bandwidth_gbs", "nccl_collective_exec_time_microseconds"
		if k.P2P {
			labels += fmt.Sprintf(`p2p_operation="%s",message_size="%s"`, k.Op, k.MessageSize)
			bw, ex = "nccl_p2p_bus_bandwidth_gbs", "nccl_p2p_exec_time_microseconds"
		} else {
			labels += fmt.Sprintf(`collective="%s",message_size="%s",algo_proto="%s"`, k.Op, k.MessageSize, k.AlgoProto)
		}
		fmt.Fprintf(&b, "%s{%s} %s\n%s{%s} %s\n", bw, labels, strconv.FormatFloat(k.BusBw, 'g', 6, 64),
			ex, labels, strconv.FormatFloat(k.ExecUs, 'g', 6, 64))
	}
	return b.String()
}

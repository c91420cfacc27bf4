package scenario // import "github.com/otelcol-iclens/otelcol-iclens/internal/scenario"

import (
	"fmt"
	"strconv"
	"strings"
)

// The two-job node: two batch jobs share one 8-GPU node, each with four GPUs, one NIC and the
// IIO stacks of its own socket; job JobB ends at the switch and JobC takes its devices.
const (
	JobA = "4711"
	JobB = "4712"
	JobC = "4713"
	// JobGPUs is how many GPUs each job holds.
	JobGPUs = 4
)

// JobGPU is the gpu receiver's name of GPU k (0-3) of job j (0: JobA, 1: JobB/JobC).
func JobGPU(j, k int) string { return "gpu" + strconv.Itoa(JobGPUs*j+k) }

// JobGPUBus is that GPU's PCI address.
func JobGPUBus(j, k int) string { return fmt.Sprintf("0000:%02x:00.0", 0x18+0x10*(JobGPUs*j+k)) }

// JobNIC is job j's RDMA device, JobPort its port, JobNetdev its netdev, JobNICBus its address.
func JobNIC(j int) string    { return "mlx5_" + strconv.Itoa(j) }
func JobPort(j int) string   { return JobNIC(j) + "/1" }
func JobNetdev(j int) string { return "ens" + strconv.Itoa(j+1) + "f0np0" }
func JobNICBus(j int) string { return fmt.Sprintf("0000:%02x:00.0", 0x1c+0x80*j) }
func jobStack(j int, d string) string {
	if j == 0 {
		return d
	}
	// Job 1 sits on the other socket's stacks: socket0/iio1 -> socket1/iio5.
	sock, iio, _ := strings.Cut(d, "/iio")
	s, _ := strconv.Atoi(strings.TrimPrefix(sock, "socket"))
	x, _ := strconv.Atoi(iio)
	return fmt.Sprintf("socket%d/iio%d", 1-s, x+4)
}

// JobOwner is the job that owns job slot j's devices at sample i of a run switching at switchAt
// (JobA; JobB, JobC from switchAt on).
func JobOwner(j, i, switchAt int) string {
	switch {
	case j == 0:
		return JobA
	case i < switchAt:
		return JobB
	}
	return JobC
}

// TwoJobStream renders one node shared by two jobs as the rnic, cpuuncore, gpu and owner
// receivers report it: slot 0 (JobA) carries node 0 of case a, slot 1 (JobB, JobC from sample
// switchAt) node 0 of case b, each job's GPU bytes split evenly over its four GPUs, host memory the
// sum of both (the node's). The owner points are what the owner receiver emits from a Slurm
// mapping directory: each GPU its job's, each NIC (and netdev) the single owner of the GPUs it is
// nearest to, the stacks' totals shared, host memory the node's; at the switch the ended job's
// series once at 0.
func TwoJobStream(a, b Case, samples int, interval float64, switchAt int) [][]Point {
	return twoJobs([2][][]Point{a.Stream(0, samples, interval), b.Stream(0, samples, interval)}, samples, switchAt)
}

// TwoJobSteadyStream is TwoJobStream without the ripple (SteadyStream), for promtool tests.
func TwoJobSteadyStream(a, b Case, samples int, interval float64, switchAt int) [][]Point {
	return twoJobs([2][][]Point{a.SteadyStream(0, samples, interval), b.SteadyStream(0, samples, interval)}, samples, switchAt)
}

func twoJobs(streams [2][][]Point, samples, switchAt int) [][]Point {
	out := make([][]Point, samples)
	for i := range samples {
		var pts []Point
		index := map[string]int{}
		add := func(p Point) {
			k := p.Key()
			if at, ok := index[k]; ok {
				if p.Counter {
					pts[at].Value += p.Value // host memory: both jobs' bytes on the node's controllers
				}
				return
			}
			index[k] = len(pts)
			pts = append(pts, p)
		}
		for j, s := range streams {
			for _, p := range s[i] {
				for _, q := range jobPoints(j, p) {
					add(q)
				}
			}
			for _, q := range ownerPoints(j, JobOwner(j, i, switchAt), 1) {
				add(q)
			}
			if j == 1 && i == switchAt && switchAt > 0 {
				for _, q := range ownerPoints(j, JobOwner(j, i-1, switchAt), 0) {
					add(q)
				}
			}
		}
		for _, q := range []Point{ownerPoint("cpu_pcie", "", "", "shared", "rule", "", 1), ownerPoint("cpu_memory", "", "", "node", "rule", "", 1)} {
			add(q)
		}
		out[i] = pts
	}
	return out
}

// jobPoints moves one point of the single-GPU model to job slot j: its GPU becomes four, its NIC,
// port, netdev and stacks the slot's.
func jobPoints(j int, p Point) []Point {
	rename := func(attrs map[string]string) map[string]string {
		out := make(map[string]string, len(attrs))
		for k, v := range attrs {
			switch {
			case v == NIC:
				v = JobNIC(j)
			case v == Port:
				v = JobPort(j)
			case v == Netdev:
				v = JobNetdev(j)
			case v == nicNearBusID || v == nicFarBusID:
				v = JobNICBus(j)
			case strings.HasPrefix(v, "socket") && strings.Contains(v, "/iio"):
				v = jobStack(j, v)
			}
			out[k] = v
		}
		return out
	}
	// A point of the GPU (by name or address) is one per GPU of the job, its bytes split.
	if p.Attrs["device"] == GPU || p.Attrs["pci.bus_id"] == gpuBusID || p.Attrs["gpu.pci.bus_id"] == gpuBusID {
		out := make([]Point, 0, JobGPUs)
		for k := range JobGPUs {
			q := Point{Metric: p.Metric, Counter: p.Counter, Value: p.Value, Attrs: rename(p.Attrs)}
			if p.Counter {
				q.Value = p.Value / JobGPUs
			}
			for a, v := range q.Attrs {
				switch v {
				case GPU:
					q.Attrs[a] = JobGPU(j, k)
				case gpuBusID:
					q.Attrs[a] = JobGPUBus(j, k)
				}
			}
			out = append(out, q)
		}
		return out
	}
	return []Point{{Metric: p.Metric, Counter: p.Counter, Value: p.Value, Attrs: rename(p.Attrs)}}
}

// ownerPoints are slot j's interconnect.owner points for job.
func ownerPoints(j int, job string, v float64) []Point {
	var out []Point
	for k := range JobGPUs {
		out = append(out, ownerPoint("gpu_pcie", JobGPU(j, k), JobGPUBus(j, k), "job", "slurm", job, v))
	}
	return append(out,
		ownerPoint("rnic", JobNIC(j), JobNICBus(j), "job", "rule", job, v),
		ownerPoint("netdev", JobNetdev(j), JobNICBus(j), "job", "rule", job, v))
}

func ownerPoint(component, device, bus, kind, source, job string, v float64) Point {
	return Point{Metric: "interconnect.owner", Value: v, Attrs: map[string]string{
		"component": component, "device": device, "pci.bus_id": bus, "owner.kind": kind, "owner.source": source,
		"job.id": job, "user.name": "", "job.partition": "", "k8s.namespace.name": "", "k8s.pod.name": "", "k8s.container.name": "",
	}}
}

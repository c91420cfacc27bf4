package scenario

// JobOwnerPoints is what the owner receiver reports (receiver/ownerreceiver/metadata.yaml,
// interconnect.owner) on a simulated node whose GPU and RDMA device a Slurm job holds: one info
// point per device, value 1 while the job holds it. A gateway's view groups nodes by it.
func JobOwnerPoints(jobID string) []Point {
	owner := func(component, device, bus string) Point {
		return Point{Metric: "interconnect.owner", Value: 1, Attrs: map[string]string{
			"component": component, "device": device, "pci.bus_id": bus,
			"owner.kind": "job", "owner.source": "slurm", "job.id": jobID, "job.partition": "gpu",
			"user.name": "", "k8s.namespace.name": "", "k8s.pod.name": "", "k8s.container.name": "",
		}}
	}
	return []Point{owner("gpu_pcie", GPU, gpuBusID), owner("rnic", Port, nicNearBusID)}
}

package dashboard

import "fmt"

// owners attributes the bytes to whoever owns the device (the owner receiver's
// interconnect.owner info series, joined on the device's identity): interconnect.io itself keeps
// one series per device whoever owns it, so the join happens here, in the query.
func (g *gen) owners() {
	g.row("Whose bytes: per job and per pod")
	// The owner's selector carries the $job / $pod variable: the panels show the selected owners.
	const join = ` * on (host_name, component, pci_bus_id) group_left (%s) (interconnect_owner{host_name=~"$node", owner_kind="%s", %s} == 1))`

	g.add(g.timeSeries("Bytes/s per job and component",
		"interconnect.io joined to the owner receiver's interconnect.owner (Slurm jobs, bare-metal jobs): each GPU's and NIC's bytes under the job that owns the device. Devices of several owners are owner_kind=shared, host memory is node.",
		"Bps", 12, 8,
		target{
			expr:   `sum by (host_name, job_id, component, direction) (rate(interconnect_io_bytes_total{host_name=~"$node"}[$__rate_interval])` + fmt.Sprintf(join, "job_id", "job", `job_id=~"$job"`),
			legend: "{{host_name}} job {{job_id}} {{component}} {{direction}}",
		}))
	g.add(g.timeSeries("Bytes/s per pod and component",
		"The same join for Kubernetes pods (kubelet pod-resources: GPUs and SR-IOV VFs allocated to the pod).",
		"Bps", 12, 8,
		target{
			expr:   `sum by (host_name, k8s_namespace_name, k8s_pod_name, component, direction) (rate(interconnect_io_bytes_total{host_name=~"$node"}[$__rate_interval])` + fmt.Sprintf(join, "k8s_namespace_name, k8s_pod_name", "pod", `k8s_pod_name=~"$pod"`),
			legend: "{{host_name}} {{k8s_namespace_name}}/{{k8s_pod_name}} {{component}} {{direction}}",
		}))
}

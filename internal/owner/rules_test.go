package owner

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAssignRootPortAndNIC: the rules on a hand-built inventory. Two GPUs of two jobs below one
// root port make it shared; a root port with nothing owned is the node's; a NIC nearest to two
// GPUs of one pod (its two containers) is the pod's; every GPU, NIC and port is covered once.
func TestAssignRootPortAndNIC(t *testing.T) {
	inv := &Inventory{
		GPUs: []GPU{
			{Address: "0000:19:00.0", Index: 0, RootPort: "0000:15:01.0"},
			{Address: "0000:1a:00.0", Index: 1, RootPort: "0000:15:01.0"},
			{Address: "0000:41:00.0", Index: 2, RootPort: "0000:3d:01.0"},
			{Address: "0000:42:00.0", Index: 3, RootPort: "0000:3d:01.0"},
			{Address: "0000:61:00.0", Index: 4, RootPort: "0000:5d:01.0"},
		},
		RDMA:      []RDMA{{Name: "mlx5_0", Address: "0000:18:00.0", RootPort: "0000:15:01.0"}, {Name: "mlx5_3", Address: "0000:40:00.0", Netdevs: []string{"ibp64s0"}, RootPort: "0000:3d:01.0"}},
		Nearest:   map[string]string{"0000:19:00.0": "mlx5_0", "0000:1a:00.0": "mlx5_0", "0000:41:00.0": "mlx5_3", "0000:42:00.0": "mlx5_3"},
		RootPorts: []string{"0000:15:01.0", "0000:3d:01.0", "0000:5d:01.0", "0000:80:01.0"},
	}
	claims := Claims{}
	claims.add("0000:19:00.0", Owner{Kind: KindJob, Source: SourceSlurm, JobID: "1"})
	claims.add("0000:1a:00.0", Owner{Kind: KindJob, Source: SourceSlurm, JobID: "2"})
	claims.add("0000:41:00.0", Owner{Kind: KindPod, Source: SourceKubernetes, Namespace: "n", Pod: "p", Container: "a"})
	claims.add("0000:42:00.0", Owner{Kind: KindPod, Source: SourceKubernetes, Namespace: "n", Pod: "p", Container: "b"})

	// mlx5_3 has a VF held by the same pod, mlx5_0 one held by another job.
	inv.RDMA = append(inv.RDMA, RDMA{Name: "mlx5_12", Address: "0000:40:00.2", PF: "0000:40:00.0", RootPort: "0000:3d:01.0"},
		RDMA{Name: "mlx5_13", Address: "0000:18:00.2", PF: "0000:18:00.0", RootPort: "0000:15:01.0"})
	claims.add("0000:40:00.2", Owner{Kind: KindPod, Source: SourceKubernetes, Namespace: "n", Pod: "p", Container: "a"})
	claims.add("0000:18:00.2", Owner{Kind: KindJob, Source: SourceSlurm, JobID: "3"})

	got := map[string]Owner{}
	for _, a := range Assign(inv, claims) {
		key := a.Component + " " + a.PCIBusID
		_, dup := got[key]
		assert.False(t, dup, "%s assigned twice", key)
		got[key] = a.Owner
	}
	pod := Owner{Kind: KindPod, Source: SourceRule, Namespace: "n", Pod: "p"}
	assert.Equal(t, Shared(), got["rnic 0000:18:00.0"], "nearest to two jobs' GPUs")
	assert.Equal(t, Shared(), got["cpu_pcie 0000:15:01.0"])
	assert.Equal(t, pod, got["rnic 0000:40:00.0"], "one pod, its container names dropped, its VF too")
	assert.Equal(t, "pod n/p/a", got["rnic 0000:40:00.2"].String())
	assert.Equal(t, "job 3", got["rnic 0000:18:00.2"].String())
	assert.Equal(t, pod, got["netdev 0000:40:00.0"])
	assert.Equal(t, pod, got["cpu_pcie 0000:3d:01.0"])
	assert.Equal(t, Node(), got["cpu_pcie 0000:5d:01.0"], "an idle GPU below: the node's")
	assert.Equal(t, Node(), got["cpu_pcie 0000:80:01.0"])
	assert.Equal(t, Node(), got["cpu_memory "])
	assert.Equal(t, Shared(), got["cpu_pcie "])
	assert.NotContains(t, got, "gpu_pcie 0000:61:00.0", "an idle GPU has no owner")
	assert.Len(t, got, 4*3+2+1+2+4+2)
}

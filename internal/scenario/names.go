package scenario

// Nodes are the simulated hosts' names.
var Nodes = [2]string{"node1", "node2"}

// HostName is the host.name of a case's node in the replayed metrics: every case runs at once,
// each pair of nodes under names of its own.
func HostName(c Case, node string) string { return c.Name + "-" + node }

// Names of the simulated node's devices (NIC, GPU and Port are with the verdicts, model.go), as
// the recordings lay them out (tools/simulate) and the receivers report them.
const (
	// Netdev is the netdev of NIC's port.
	Netdev = "ens1f0np0"
	// NIC2 is the second RDMA device (Traffic.SecondNIC) and Netdev2 its port's netdev.
	NIC2    = "mlx5_1"
	Netdev2 = "ens2f0np0"
)

// Socket1Share is the memory background on the idle socket, as a share of socket 0's.
const Socket1Share = 0.2

// MTU is the RoCE path MTU of the simulated ports: packets = bytes / MTU.
const MTU = mtu

// Wobble is the deterministic ripple of a case's rates at sample i of node (see wobble).
func Wobble(i, node int) float64 { return wobble(i, node) }

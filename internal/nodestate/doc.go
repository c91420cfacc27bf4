// Package nodestate turns the receivers' metrics (pmetric, as the rnic, cpuuncore and gpu
// receivers emit them: receiver/*/metadata.yaml) into one node's state at an instant: the bytes
// per second of each interconnect component and direction, the RDMA ports with their link rate
// and congestion counters, the GPUs with their identities (the gpu receiver's device joined to the
// rnic receiver's gpu.pci.bus_id by PCI address) and their PCIe link, and the GPUDirect topology.
// It is the one decoding of those metrics: the diagnosis connector evaluates a State, the
// lensview exporter draws it.
//
// A Node keeps the three newest samples of each series it reads (PromQL's irate needs the two
// newest at or before the evaluation; the third covers a point stamped just after it, series.go);
// Node.At reads them at an instant into a State. Rates are PromQL's irate over a window, a
// decrease read as a counter reset, a quantity no series has a rate for is absent (NaN), exactly
// as the diagnosis connector's generated Prometheus rules compute them.
//
// Where it grows next:
//   - owners (which pod or job owns each device, owners.go): State.Owners maps a device's identity
//     (component and pci.bus_id) to its owner, read from the owner receiver's interconnect.owner
//     info series (receiver/ownerreceiver; value 1 while the ownership holds, 0 once when it ends),
//     so that interconnect.io itself stays one series per device; State.ByOwner is each pod's or
//     job's share of the node, the rates of its own instances.
//   - NCCL collectives (collectives.go) are read: State.Collectives per communicator (its id, its
//     lowest local rank's GPU by pci.bus_id, the bus bandwidth of each collective type's large
//     messages, RAS ranks by state and operation counts), from the nccl receiver's
//     nccl.collective.* and nccl.ras.* series; a cross-node evaluation can group nodes by
//     communicator next.
package nodestate // import "github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"

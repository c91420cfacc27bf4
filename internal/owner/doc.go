// Package owner resolves whose bytes move through each interconnect component of a node: the
// Kubernetes pod (kubelet pod-resources API), the Slurm job (the prolog's mapping directory that
// dcgm-exporter's HPC mode reads), the job of a GPU's processes (/proc) or a static file, turned
// on one by one in configuration.
//
// Sources claim devices by the identities the receivers already use: a GPU by its PCI address or
// its UUID (or the device plugin's name for it), an RDMA device by name or PCI address, an SR-IOV
// VF by its PCI address. Assign then applies the per-component rules (rules.go) so that every
// byte has exactly one owner or is explicitly `shared` or `node`, and the owner receiver publishes
// the result as info series that queries join with interconnect.io; no series is multiplied.
//
// The Resolver refreshes on its own ticker, never on a scrape: a scrape reads the last snapshot.
package owner // import "github.com/otelcol-iclens/otelcol-iclens/internal/owner"

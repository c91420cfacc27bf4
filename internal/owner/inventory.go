package owner

import (
	"errors"
	"os"
	"path/filepath"
	"slices"

	"github.com/otelcol-iclens/otelcol-iclens/internal/natorder"
	"github.com/otelcol-iclens/otelcol-iclens/internal/nvidiaproc"
	"github.com/otelcol-iclens/otelcol-iclens/internal/pci"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	"github.com/otelcol-iclens/otelcol-iclens/internal/topology"
)

// GPU is a GPU of the node under every name a source may use for it.
type GPU struct {
	// Address is the PCI address (0000:3b:00.0), the pci.bus_id of the gpu receiver's points.
	Address string
	// Index is the GPU's place among the node's NVIDIA GPUs in PCI bus order: nvidia-smi's and
	// NVML's index (and so the file name dcgm-exporter's HPC mapping directory uses) unless
	// CUDA_DEVICE_ORDER or a driver option reorders them.
	Index int
	// UUID (GPU-...) and Minor (/dev/nvidia<Minor>) as the NVIDIA driver prints them in
	// /proc/driver/nvidia/gpus/<address>/information (internal/nvidiaproc); empty and -1 where
	// the driver is not loaded.
	UUID  string
	Minor int
	// RootPort is the root port the GPU hangs off.
	RootPort string
}

// RDMA is an RDMA device (a PF or an SR-IOV VF) of the node.
type RDMA struct {
	Name    string // mlx5_0
	Address string // its PCI function
	// PF is the physical function's address when the device is a VF (the function's physfn link,
	// drivers/pci/iov.c pci_iov_sysfs_link), empty for a PF.
	PF       string
	Netdevs  []string // the function's network devices (<function>/net/*)
	RootPort string
}

// Inventory is what a node has that an owner can be given: GPUs, RDMA devices and the root ports
// above them, with each GPU's nearest NIC.
type Inventory struct {
	GPUs []GPU
	RDMA []RDMA
	// Nearest maps a GPU's address to the name of its nearest RDMA device (topology.Resolve).
	Nearest map[string]string
	// RootPorts are the addresses of the root ports with a device below them, sorted.
	RootPorts []string
}

// Discover reads the inventory from sysfs under root/sys and the NVIDIA driver's procfs under
// root/proc. Parts it cannot read are left out and returned as the error with what it found.
func Discover(r *sysfs.Reader, root string) (*Inventory, error) {
	sys := filepath.Join(root, "sys")
	var errs []error
	nics, vfs, err := rdmaDevices(r, sys)
	if err != nil {
		errs = append(errs, err)
	}
	topo, err := topology.Resolve(r, root, sys, nics, false)
	if err != nil {
		errs = append(errs, err)
	}
	inv := &Inventory{Nearest: map[string]string{}}
	if topo == nil {
		return inv, errors.Join(errs...)
	}
	driver, err := nvidiaproc.List(filepath.Join(root, "proc"))
	if err != nil {
		errs = append(errs, err)
	}
	nvIndex := 0
	for _, g := range topo.GPUs {
		gpu := GPU{Address: g.Address(), Index: -1, Minor: -1, RootPort: g.PCI.RootPort()}
		if g.PCI.Vendor == pci.VendorNVIDIA {
			gpu.Index = nvIndex
			nvIndex++
			if i := slices.IndexFunc(driver, func(d nvidiaproc.GPU) bool { return d.Address == gpu.Address }); i >= 0 {
				gpu.UUID, gpu.Minor = driver[i].UUID, driver[i].Minor
			}
		}
		inv.GPUs = append(inv.GPUs, gpu)
	}
	for _, n := range topo.NICs {
		inv.RDMA = append(inv.RDMA, RDMA{Name: n.Name, Address: n.Address(), PF: vfs[n.Address()],
			Netdevs: netdevs(filepath.Join(sys, "bus", "pci", "devices", n.Address(), "net")), RootPort: n.PCI.RootPort()})
	}
	for _, p := range topo.Nearest {
		inv.Nearest[p.GPU.Address()] = p.NIC.Name
	}
	inv.RootPorts, err = rootPorts(r, sys)
	if err != nil {
		errs = append(errs, err)
	}
	return inv, errors.Join(errs...)
}

// rdmaDevices lists /sys/class/infiniband with each device's PCI function, and the VFs among them
// (function address -> PF address).
func rdmaDevices(r *sysfs.Reader, sys string) ([]topology.NIC, map[string]string, error) {
	dir := filepath.Join(sys, "class", "infiniband")
	names, err := sysfs.ListDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	slices.SortFunc(names, natorder.Compare)
	var (
		nics []topology.NIC
		errs []error
	)
	vfs := map[string]string{}
	for _, name := range names {
		d, err := pci.FromLink(r, filepath.Join(dir, name, "device"))
		if d == nil {
			if !errors.Is(err, pci.ErrNotPCI) {
				errs = append(errs, err)
			}
			continue
		}
		nics = append(nics, topology.NIC{Name: name, Address: d.Address})
		if pf, err := filepath.EvalSymlinks(filepath.Join(d.Path, "physfn")); err == nil {
			vfs[d.Address] = filepath.Base(pf)
		}
	}
	return nics, vfs, errors.Join(errs...)
}

// rootPorts returns the root ports that have a function below them (Chain[0] of every deeper
// function); an integrated endpoint on the root bus has no root port of its own.
func rootPorts(r *sysfs.Reader, sys string) ([]string, error) {
	all, err := pci.Scan(r, sys)
	seen := map[string]bool{}
	var out []string
	for _, d := range all {
		if len(d.Chain) > 1 && !seen[d.Chain[0]] {
			seen[d.Chain[0]] = true
			out = append(out, d.Chain[0])
		}
	}
	slices.Sort(out)
	return out, err
}

func netdevs(dir string) []string {
	names, _ := sysfs.ListDir(dir)
	slices.SortFunc(names, natorder.Compare)
	return names
}

// gpuByAddress, gpuByUUID and gpuByIndex look a GPU up; nil when there is none.
func (inv *Inventory) gpuBy(match func(*GPU) bool) *GPU {
	for i := range inv.GPUs {
		if match(&inv.GPUs[i]) {
			return &inv.GPUs[i]
		}
	}
	return nil
}

func (inv *Inventory) rdmaBy(match func(*RDMA) bool) *RDMA {
	for i := range inv.RDMA {
		if match(&inv.RDMA[i]) {
			return &inv.RDMA[i]
		}
	}
	return nil
}

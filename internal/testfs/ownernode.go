package testfs

import (
	"os"
	"path"
	"path/filepath"
	"strconv"
	"testing"
)

// The trees the owner resolver reads besides the PCI tree and the NVIDIA driver's per-GPU procfs
// file (NvidiaGPUs): SR-IOV VF links, processes (/proc/<pid>) and the Slurm prolog's mapping
// directory.

// FunctionRel returns where the function addr sits below /sys in node (devices/pci0000:17/...),
// "" when node has no such function.
func FunctionRel(node PCINode, addr string) string {
	var find func(parent string, fs []PCIFunction) string
	find = func(parent string, fs []PCIFunction) string {
		for _, f := range fs {
			rel := path.Join(parent, f.Address)
			if f.Address == addr {
				return rel
			}
			if r := find(rel, f.Children); r != "" {
				return r
			}
		}
		return ""
	}
	for _, rb := range node.RootBuses {
		if r := find(path.Join("devices", rb.Name), rb.RootPorts); r != "" {
			return r
		}
	}
	return ""
}

// SRIOVVF adds the VF vf of the PF at pfRel (FunctionRel) as the kernel lays it out: a sibling
// function of the PF on the same bus, with <vf>/physfn -> ../<pf> and <pf>/virtfn<n> -> ../<vf>
// (drivers/pci/iov.c pci_iov_sysfs_link).
func (t *Tree) SRIOVVF(pfRel string, n int, vf PCIFunction, numa int) {
	parent, pf := path.Dir(pfRel), path.Base(pfRel)
	t.PCIFunction(parent, vf, numa)
	t.Link(path.Join("sys", parent, vf.Address, "physfn"), "../"+pf)
	t.Link(path.Join("sys", pfRel, "virtfn"+strconv.Itoa(n)), "../"+vf.Address)
}

// Process is a /proc/<pid> entry as the owner resolver reads it.
type Process struct {
	PID int
	// Environ is the initial environment ("K=V"), written by ProcEnviron.
	Environ []string
	// Cgroup is /proc/<pid>/cgroup ("0::/system.slice/slurmstepd.scope/job_4711/step_0/user/task_0"
	// under cgroup v2, kernel/cgroup/cgroup.c proc_cgroup_show).
	Cgroup string
	// FDs maps a descriptor number to the link target /proc/<pid>/fd/<n> shows (/dev/nvidia0).
	FDs map[int]string
}

// ProcessEntry adds p under proc/.
func (t *Tree) ProcessEntry(p Process) {
	dir := path.Join("proc", strconv.Itoa(p.PID))
	t.ProcEnviron(p.PID, p.Environ)
	if p.Cgroup != "" {
		t.File(path.Join(dir, "cgroup"), p.Cgroup+"\n")
	}
	t.Dir(path.Join(dir, "fd"))
}

// WriteProcessFDs links root/proc/<pid>/fd/<n> to the absolute targets of p.FDs, as the kernel
// shows them (fs/proc/fd.c proc_fd_link: the file's d_path). A Tree holds only relative links
// (recordings refuse absolute ones), so these are made after Tree.Write.
func WriteProcessFDs(tb testing.TB, root string, p Process) {
	tb.Helper()
	dir := filepath.Join(root, "proc", strconv.Itoa(p.PID), "fd")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	for fd, target := range p.FDs {
		if err := os.Symlink(target, filepath.Join(dir, strconv.Itoa(fd))); err != nil {
			tb.Fatal(err)
		}
	}
}

// SlurmMapping adds dir/<name> as a prolog writes it: one job a line (dcgm-exporter's
// internal/pkg/transformation/hpc.go readFile format); no lines is an epilog's empty file.
func (t *Tree) SlurmMapping(dir, name string, lines ...string) {
	content := ""
	for _, l := range lines {
		content += l + "\n"
	}
	t.File(path.Join(dir, name), content)
}

// Package nvidiaproc reads the NVIDIA kernel module's per-GPU procfs files, the one place a GPU's
// UUID and device minor can be read without loading NVML.
package nvidiaproc // import "github.com/otelcol-iclens/otelcol-iclens/internal/nvidiaproc"

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/pci"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
)

// GPU is one GPU as /proc/driver/nvidia/gpus/<address>/information shows it
// (open-gpu-kernel-modules kernel-open/nvidia/nv-procfs.c nv_procfs_read_gpu_info:
// "GPU UUID: \t %s", "Bus Location: \t %04x:%02x:%02x.%x", "Device Minor: \t %u").
type GPU struct {
	Address string // 0000:18:00.0, the kernel's pci_name()
	UUID    string // GPU-...
	Minor   int    // /dev/nvidia<Minor>; -1 where the file has none
}

// maxInformation bounds one file: a dozen short lines.
const maxInformation = 64 << 10

// List reads every GPU under procRoot (the host's /proc), sorted by PCI address. No driver loaded
// is an empty list, not an error; a file that cannot be read or parsed is left out and returned
// in the error with the others.
func List(procRoot string) ([]GPU, error) {
	dir := filepath.Join(procRoot, "driver", "nvidia", "gpus")
	names, err := sysfs.ListDir(dir)
	if err != nil {
		return nil, err
	}
	var (
		gpus []GPU
		errs []error
	)
	for _, name := range names {
		g, err := ReadInformation(filepath.Join(dir, name, "information"))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if g.Address == "" {
			g.Address = pci.NormaliseAddress(name)
		}
		gpus = append(gpus, g)
	}
	slices.SortFunc(gpus, func(a, b GPU) int { return strings.Compare(a.Address, b.Address) })
	return gpus, errors.Join(errs...)
}

// ReadInformation parses one information file.
func ReadInformation(path string) (GPU, error) {
	g := GPU{Minor: -1}
	b, err := sysfs.ReadFile(path, maxInformation)
	if err != nil {
		return g, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch strings.TrimSpace(key) {
		case "GPU UUID":
			g.UUID = val
		case "Bus Location":
			g.Address = pci.NormaliseAddress(val)
		case "Device Minor":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return g, fmt.Errorf("%s: Device Minor: not a number, got %q", path, val)
			}
			g.Minor = n
		}
	}
	return g, nil
}

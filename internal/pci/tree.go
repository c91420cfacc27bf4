package pci

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
)

// RootBusDir is the host bridge directory of a root bus under /sys/devices: the PCI core names
// it pci%04x:%02x (domain:bus), and every function behind that bus sits below it
// (Documentation/PCI/sysfs-pci.rst: "the topmost element describes the PCI domain and bus
// number"). rootBus is "0000:17" as uncore_iio_N/dieX prints it ("%04x:%02x").
func RootBusDir(devicesDir, rootBus string) string {
	return filepath.Join(devicesDir, "pci"+rootBus)
}

// FunctionAddress returns the address of function fn of device dev on a root bus ("0000:17", 2, 0
// -> "0000:17:02.0").
func FunctionAddress(rootBus string, dev, fn int) string {
	return fmt.Sprintf("%s:%02x.%d", rootBus, dev, fn)
}

// Function is a PCI function found in the tree.
type Function struct {
	// Address is the function's PCI address (0000:3b:00.0).
	Address string
	// Dir is its sysfs directory.
	Dir string
}

// classBridge is the base class and subclass of a PCI-to-PCI bridge (class code 0x0604xx: a root
// port or a switch port; PCI Code and ID Assignment Specification, base class 06h subclass 04h).
const classBridge = 0x0604

// IsBridge reports whether the function in dir is a PCI-to-PCI bridge by its class attribute
// ("0x060400", drivers/pci/pci-sysfs.c class_show): a port the bytes of the devices below it
// cross, which carries none of its own. An unreadable class is no bridge.
func IsBridge(r *sysfs.Reader, dir string) bool {
	s, err := r.ReadString(filepath.Join(dir, "class"))
	if err != nil {
		return false
	}
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 32)
	return err == nil && v>>8 == classBridge
}

// Below lists the PCI functions in the tree under dir (a root bus or a bridge directory),
// depth first and sorted at each level, without dir itself. Directories that are not PCI
// functions (power/, msi_irqs/, a netdev's class directory) are not entered. A missing dir yields
// no functions and no error: a root port that does not exist has nothing behind it.
func Below(dir string) ([]Function, error) {
	var out []Function
	err := walkFunctions(dir, func(f Function) { out = append(out, f) })
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return out, err
}

func walkFunctions(dir string, visit func(Function)) error {
	entries, err := sysfs.ReadDir(dir)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		// Functions are real directories; symlinks (driver, subsystem, iommu_group) would lead
		// out of the tree.
		if e.IsDir() && IsAddress(e.Name()) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		sub := filepath.Join(dir, n)
		visit(Function{Address: n, Dir: sub})
		if err := walkFunctions(sub, visit); err != nil {
			return err
		}
	}
	return nil
}

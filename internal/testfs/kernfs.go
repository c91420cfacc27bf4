package testfs

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// KernfsRemoved fits sysfs.Reader.OnOpen and makes a fixture tree answer a read of a removed
// file as sysfs does. A descriptor kept open on a tmpfs or ext4 fixture goes on reading the
// deleted file's old content; on sysfs the attribute's kernfs node is deactivated when its device
// is removed, and every read through a descriptor still open fails with ENODEV
// (fs/kernfs/file.c: kernfs_fop_read_iter -> kernfs_seq_start, kernfs_get_active(of->kn) fails ->
// -ENODEV). A fresh open of the removed path fails with ENOENT by itself; this hook answers ENODEV
// for both, which callers treat alike (sysfs.PathError matches os.ErrNotExist for either).
func KernfsRemoved(path string) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return syscall.ENODEV
	}
	return nil
}

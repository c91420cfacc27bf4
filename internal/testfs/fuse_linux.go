package testfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// StuckDir is a FUSE file system mounted over one directory of a fixture tree (a port's
// counters/, say) that passes every operation through to the directory's files, except that a
// read of a file made stuck with Block does not return until Release.
//
// It stands in for a sysfs attribute whose show() is stuck behind hung firmware: an mlx5 PMA
// counter read is a MAD_IFC firmware command (drivers/infiniband/hw/mlx5/mad.c), and the driver
// waits for its completion uninterruptibly (drivers/net/ethernet/mellanox/mlx5/core/cmd.c,
// wait_func: wait_for_completion_timeout, up to the command timeout of 60 s). So the stuck read
// here ignores the FUSE interrupt the kernel sends when the reader gets a signal: the reading
// thread stays in the kernel (fs/fuse/dev.c request_wait_answer waits uninterruptibly once the
// server holds the request), and the process cannot finish exiting, SIGKILL included, until the
// read is released. Like kernfs, which has no page cache and calls show() on every read
// (fs/kernfs/file.c kernfs_fop_read_iter), every read reaches the server (FOPEN_DIRECT_IO),
// through a descriptor kept open too.
type StuckDir struct {
	dir     string
	server  *fuse.Server
	mu      sync.Mutex
	stuck   map[string]bool
	release chan struct{}
	waiting atomic.Int32
}

// MountStuckDir copies the files of dir to a directory of the test's own, which the pass-through
// reads and writes, and mounts it over dir (dir's own files are hidden while it is mounted; a
// walk of the tree, GrowCounters included, goes through the mount and would wait on a stuck file).
// It skips the test when /dev/fuse cannot be opened or mounting is not permitted (no fusermount is
// needed: go-fuse calls mount(2) itself, which takes CAP_SYS_ADMIN).
// The test's cleanup releases every stuck read and unmounts, waiting for the readers to let go
// (a process killed in a stuck read exits once it is released).
func MountStuckDir(tb testing.TB, dir string) *StuckDir {
	tb.Helper()
	if f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0); err != nil {
		tb.Skipf("FUSE is not available (%v): the stuck-read stand-in needs /dev/fuse", err)
	} else {
		f.Close()
	}
	backing := filepath.Join(tb.TempDir(), filepath.Base(dir))
	CopyTree(tb, dir, backing)
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		tb.Fatal(err)
	}
	s := &StuckDir{dir: dir, stuck: map[string]bool{}, release: make(chan struct{})}
	lr := &fs.LoopbackRoot{Path: backing, Dev: uint64(st.Dev)}
	root := &stuckNode{LoopbackNode: &fs.LoopbackNode{RootData: lr}, s: s}
	lr.RootNode = root
	server, err := fs.Mount(dir, root, &fs.Options{MountOptions: fuse.MountOptions{
		DirectMountStrict: true,
		FsName:            "testfs-stuck",
		Name:              "testfs",
	}})
	if err != nil {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
			tb.Skipf("mounting a FUSE file system is not permitted here (%v)", err)
		}
		tb.Fatalf("mounting the stuck-read stand-in over %s: %v", dir, err)
	}
	s.server = server
	tb.Cleanup(func() { s.unmount(tb) })
	return s
}

// Block makes the reads of name (a path relative to the mounted directory) stuck from now on.
func (s *StuckDir) Block(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stuck[name] = true
}

// Release lets every stuck read return (with the file's content) and every later one through.
func (s *StuckDir) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.release:
	default:
		close(s.release)
	}
	clear(s.stuck)
}

// Waiting is the number of reads stuck now.
func (s *StuckDir) Waiting() int { return int(s.waiting.Load()) }

func (s *StuckDir) blocks(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stuck[name]
}

// unmount releases the stuck reads and unmounts, retrying while the readers still hold their
// files (a killed process closes them only once it has exited); past the wait it detaches the
// mount lazily, so that nothing is left mounted over the fixture.
func (s *StuckDir) unmount(tb testing.TB) {
	s.Release()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.server.Unmount()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Logf("unmounting %s: %v; detaching it", s.dir, err)
			if err := unix.Unmount(s.dir, unix.MNT_DETACH); err != nil {
				tb.Errorf("detaching %s: %v", s.dir, err)
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stuckNode is the loopback node of go-fuse with reads that may be stuck.
type stuckNode struct {
	*fs.LoopbackNode
	s *StuckDir
}

var (
	_ fs.NodeWrapChilder = (*stuckNode)(nil)
	_ fs.NodeOpener      = (*stuckNode)(nil)
)

func (n *stuckNode) WrapChild(_ context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &stuckNode{LoopbackNode: ops.(*fs.LoopbackNode), s: n.s}
}

func (n *stuckNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, _, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &stuckFile{LoopbackFile: fh.(*fs.LoopbackFile), name: n.Path(nil), s: n.s}, fuse.FOPEN_DIRECT_IO, 0
}

// stuckFile is a loopback file whose reads wait for Release while its name is stuck.
type stuckFile struct {
	*fs.LoopbackFile
	name string
	s    *StuckDir
}

var _ fs.FileReader = (*stuckFile)(nil)

func (f *stuckFile) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if f.s.blocks(f.name) {
		f.s.waiting.Add(1)
		<-f.s.release // not ctx.Done(): the driver's wait is uninterruptible (see StuckDir)
		f.s.waiting.Add(-1)
	}
	return f.LoopbackFile.Read(ctx, buf, off)
}

// Package testfs is the one writer of kernel-shaped file trees (sysfs and procfs stand-ins): Tree
// lays a tree out and writes it to a directory (test fixtures, testdata/ generators) or hands it
// over as recording entries (the simulator, tools/simulate); PCINode and RDMANode describe whole
// nodes as the kernel lays them out. It also copies and edits fixture trees for tests that change
// counter values between scrapes without touching the committed fixtures.
package testfs // import "github.com/otelcol-iclens/otelcol-iclens/internal/testfs"

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// CopyTree copies src to dst: files, directories, and symbolic links as links (sysfs fixtures are
// made of relative links, which stay valid in the copy).
func CopyTree(tb testing.TB, src, dst string) {
	tb.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, 0o644)
		}
	})
	if err != nil {
		tb.Fatalf("copying %s: %v", src, err)
	}
}

// SetUint overwrites the single-value file root/rel with v, as the kernel would print it.
func SetUint(tb testing.TB, root, rel string, v uint64) {
	tb.Helper()
	if err := os.WriteFile(filepath.Join(root, rel), []byte(strconv.FormatUint(v, 10)+"\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
}

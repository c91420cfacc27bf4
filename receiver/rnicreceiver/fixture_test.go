package rnicreceiver

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// The synthetic fixture node (testdata/synthetic) is written by testfs.WriteRDMANode from
// testfs.SyntheticRDMANode, laid out the way the kernel lays out sysfs (the sources each part
// follows are listed in internal/testfs/rdmanode.go). The writer lives in internal/testfs because
// the benchmark harness (tools/cmd/bench-compare) writes the same tree for node_exporter.
//
// `go test -run TestSyntheticFixtureUpToDate -update` rewrites testdata/synthetic; without -update
// the test fails if the committed tree and this code disagree.

var update = flag.Bool("update", false, "rewrite testdata/synthetic and the golden files")

// TestSyntheticFixtureUpToDate keeps testdata/synthetic equal to what testfs.WriteRDMANode produces.
func TestSyntheticFixtureUpToDate(t *testing.T) {
	fixtureUpToDate(t, "synthetic", testfs.SyntheticRDMANode(), "TestSyntheticFixtureUpToDate")
}

// fixtureUpToDate keeps testdata/<name> equal to what testfs.WriteRDMANode writes for devs, or
// rewrites it with -update.
func fixtureUpToDate(t *testing.T, name string, devs []testfs.RDMADevice, test string) {
	t.Helper()
	dir := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.RemoveAll(dir))
		require.NoError(t, testfs.WriteRDMANode(dir, devs))
		return
	}
	fresh := t.TempDir()
	require.NoError(t, testfs.WriteRDMANode(fresh, devs))
	require.Equal(t, snapshotTree(t, fresh), snapshotTree(t, dir), "testdata/%s is stale: run go test -run %s -update", name, test)
}

// snapshotTree maps every path below root to its content, "-> target" for links, "dir" for directories.
func snapshotTree(t *testing.T, root string) map[string]string {
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "-> " + target
		case d.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(bytes.TrimSpace(b))
		}
		return nil
	}))
	return out
}

package testfs

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// counterDirs are the directories whose files are counters: an InfiniBand port's counters/,
// counters_ext/ and hw_counters/, a device's hw_counters/ (kernel drivers/infiniband/core/sysfs.c)
// and a network device's statistics/ (net/core/net-sysfs.c).
var counterDirs = map[string]bool{"counters": true, "counters_ext": true, "hw_counters": true, "statistics": true}

// GrowCounters adds to every counter file of the fixture tree at root its own value (v becomes 2v)
// and returns the files it changed, relative to root, with their new content.
//
// Under the start-time rule (metadata/start-time.md) the first scrape of a fixture is every
// series' baseline, so each cumulative point is 0. After GrowCounters the next scrape reports the
// fixture's own values as what was counted since: a test keeps checking the fixture's scales and
// units (x4 for the PMA data counters) on a known delta.
//
// Files that do not hold a number ("N/A (no PMA)", garbage) and hw_counters/lifespan (the
// counter cache's period in ms, not a counter) are left as they are, and so is a value of all
// ones at 32 bits: a saturated PMA counter stays stuck (IBA 1.8 §16.1.3.5); values that 64 bits
// cannot double are not changed either. Links are not followed, so each file grows once, under
// its device's real path.
func GrowCounters(tb testing.TB, root string) map[string]string {
	tb.Helper()
	changed := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() || !counterDirs[filepath.Base(filepath.Dir(p))] || d.Name() == "lifespan" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || v == 1<<32-1 || v > 1<<63-1 {
			return nil
		}
		text := strconv.FormatUint(2*v, 10) + "\n"
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		changed[rel] = text
		return nil
	})
	if err != nil {
		tb.Fatalf("growing the counters of %s: %v", root, err)
	}
	return changed
}

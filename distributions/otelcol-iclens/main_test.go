package otelcoliclens_test

import (
	"fmt"
	"os"
	"testing"
)

// keptTempDir is the temporary directory the tests were started with. What a test keeps for a
// person to look at after the run (the view's screenshots) goes there; everything else goes in
// the run's own TMPDIR, which TestMain removes.
var keptTempDir = os.TempDir()

// TestMain gives the processes these tests start (collectors, Prometheus, chromium) a TMPDIR of
// their own, removed after the run. A collector removes its replay trees when it shuts down, but
// one that a test kills (the fault tests do, and so does the cleanup when a shutdown outlasts its
// grace, as it can on a busy machine) cannot: such a machine's /tmp was found holding 126 of them.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "iclens-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "a temporary directory for the run:", err)
		os.Exit(1)
	}
	if err := os.Setenv("TMPDIR", dir); err != nil {
		fmt.Fprintln(os.Stderr, "TMPDIR:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, "removing the run's TMPDIR:", err)
	}
	os.Exit(code)
}

//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPushOverlayValidates: each push path's overlay, on the compare mode's collector config and
// on the distribution config, passes the built collector's validate (ICLENS_COLLECTOR, set by
// make test).
func TestPushOverlayValidates(t *testing.T) {
	bin := os.Getenv("ICLENS_COLLECTOR")
	if bin == "" {
		t.Skip("ICLENS_COLLECTOR is not set: `make test` builds bin/otelcol-iclens")
	}
	dir := t.TempDir()
	base := filepath.Join(dir, "compare.yaml")
	require.NoError(t, os.WriteFile(base, fmt.Appendf(nil, collectorCompareConfig, "100ms", dir, "127.0.0.1:9", true), 0o644))
	dist := filepath.Join("..", "..", "..", "distributions", "otelcol-iclens", "config.yaml")
	for _, kind := range []string{pushRemoteWrite, pushOTLP} {
		for name, c := range map[string]struct{ cfg, processors, exporters, extensions string }{
			"compare":      {base, "", exporterOf(kind), ""},
			"distribution": {dist, "memory_limiter", distributionExporters(kind), "health_check"},
		} {
			overlay := filepath.Join(dir, kind+"-"+name+".yaml")
			require.NoError(t, os.WriteFile(overlay, []byte(pushOverlay(kind, "http://127.0.0.1:9/", dir, c.processors, c.exporters, c.extensions)), 0o644))
			out, err := exec.Command(bin, "validate", "--config", c.cfg, "--config", overlay).CombinedOutput()
			assert.NoError(t, err, "%s on %s: %s", kind, name, out)
		}
	}
}

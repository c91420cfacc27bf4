package otelcoliclens_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAgentAlertsCheck: the alerts on the agent that README.md ("The monitor monitored") shows
// pass promtool's rule check (Debian's prometheus package ships promtool), and still watch the
// queues and drops that the collector's own telemetry reports (its names as the outage tests see
// them on the telemetry endpoint).
func TestAgentAlertsCheck(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is not installed; .ci/run installs Debian's prometheus package")
		}
		t.Skip("no promtool: apt-get install prometheus")
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	var rules string
	for _, block := range strings.Split(string(b), "```yaml\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		if strings.Contains(block, "name: otelcol-iclens-agent") {
			rules = block
		}
	}
	require.NotEmpty(t, rules, "README.md has no otelcol-iclens-agent rule group")
	path := filepath.Join(t.TempDir(), "agent.rules.yaml")
	require.NoError(t, os.WriteFile(path, []byte(rules), 0o644))
	out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput()
	assert.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "3 rules found")
	for _, m := range []string{"otelcol_exporter_queue_size", "otelcol_exporter_prometheusremotewrite_wal_lag",
		"otelcol_exporter_send_failed_metric_points", "otelcol_receiver_refused_metric_points", "interconnect_io_bytes_total"} {
		assert.Contains(t, rules, m)
	}
}

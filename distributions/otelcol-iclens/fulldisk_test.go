package otelcoliclens_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/otelcol-iclens/otelcol-iclens/internal/syncbuf"
)

// onTmpfs returns the program and arguments that run bin with args in a mount namespace of its
// own (unshare(1)) where dir is a tmpfs of size bytes, or skips the test where mounting is not
// permitted. unshare execs without forking, so the process started is the collector itself
// (SIGTERM reaches it) and the tmpfs goes away with it.
func onTmpfs(t *testing.T, dir string, size int, bin string, args []string) (string, []string) {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1): cannot give the collector a small disk")
	}
	probe := exec.Command(unshare, "--mount", "sh", "-c", fmt.Sprintf("mount -t tmpfs -o size=%d tmpfs %q", size, dir))
	if out, err := probe.CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs in a mount namespace here (%v: %s)", err, out)
	}
	script := fmt.Sprintf(`mount -t tmpfs -o size=%d tmpfs %q && exec "$@"`, size, dir)
	return unshare, append([]string{"--mount", "sh", "-c", script, "sh", bin}, args...)
}

// pushProbes sends one OTLP/HTTP request of n probe gauge points, values from first, to the
// collector's OTLP receiver at endpoint, and returns the HTTP status.
func pushProbes(t *testing.T, endpoint string, first int64, n int) int {
	t.Helper()
	md := pmetric.NewMetrics()
	m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName(probeMetric)
	g := m.SetEmptyGauge()
	now := time.Now()
	for i := range n {
		dp := g.DataPoints().AppendEmpty()
		dp.SetIntValue(first + int64(i))
		dp.Attributes().PutInt("probe", first+int64(i)) // a series each: nothing merges them
		dp.SetTimestamp(pcommon.NewTimestampFromTime(now))
	}
	body, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	require.NoError(t, err)
	resp, err := http.Post("http://"+endpoint+"/v1/metrics", "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestFullQueueDisk: the OTLP example's persistent queue on a 2 MiB disk that fills while the
// backend is away. An OTLP sender pushing through the collector must be told, with a retryable
// refusal (HTTP 503), when its points could not be kept; the refusals must be counted
// (otelcol_exporter_enqueue_failed_metric_points) and said (delivery_watch); and every point the
// collector acknowledged (HTTP 200) must reach the backend once it is back. Before the fix the
// example's batch processor acknowledged every request before the queue wrote it: about 101,000
// points were lost to "no space left on device" while the senders got HTTP 200.
func TestFullQueueDisk(t *testing.T) {
	t.Parallel() // waits on the clock, not the CPU (Makefile E2E_PARALLEL)
	if testing.Short() {
		t.Skip("fills a disk")
	}
	bin := collectorBinary(t)
	state := t.TempDir()
	overlay := filepath.Join(t.TempDir(), "overlay.yaml")
	require.NoError(t, os.WriteFile(overlay, []byte("extensions:\n  delivery_watch: {check_interval: 2s}\n"), 0o644))
	prog, args := onTmpfs(t, state, 2<<20, bin, []string{"--config", otlpExample, "--config", overlay})
	sink := newOTLPSink(t)
	sink.stop(t) // the backend is away: the queue can only grow
	telemetry := freeAddr(t)
	env := otlpExampleEnv(t, "OTLP_ENDPOINT=http://"+sink.addr, "OTLP_TOKEN=test", "HOSTNAME="+outageHost,
		"STATE_DIRECTORY="+state, "ICLENS_TELEMETRY_PORT="+port(t, telemetry))
	logs := &syncbuf.Buffer{}
	runCollector(t, prog, args, env, logs)
	otlpHTTP := envValue(env, "ICLENS_OTLP_HTTP_ENDPOINT") // the example's OTLP receiver
	require.Eventually(t, func() bool { return pushProbes(t, otlpHTTP, -1, 1) == http.StatusOK }, 30*time.Second, 500*time.Millisecond,
		"the collector's OTLP receiver does not answer")

	// Push until the disk has been full for a while: 2 MiB holds a few thousand points.
	const perRequest = 500
	var acked []int64
	statuses := map[int]int{}
	next := int64(0)
	for i := 0; i < 400 && statuses[http.StatusServiceUnavailable] < 20; i++ {
		status := pushProbes(t, otlpHTTP, next, perRequest)
		statuses[status]++
		if status == http.StatusOK {
			for v := next; v < next+perRequest; v++ {
				acked = append(acked, v)
			}
		}
		next += perRequest
	}
	t.Logf("pushed %d points: HTTP statuses %v, %d points acknowledged", next, statuses, len(acked))
	assert.Positive(t, statuses[http.StatusServiceUnavailable], "points the queue could not keep are refused, retryably (HTTP 503)")
	for status := range statuses {
		assert.Contains(t, []int{http.StatusOK, http.StatusServiceUnavailable}, status, "HTTP %d", status)
	}
	require.Eventually(t, func() bool {
		return telemetrySum(telemetry, "otelcol_exporter_enqueue_failed_metric_points", `exporter="otlp_http"`) > 0
	}, 30*time.Second, time.Second, "the refused points are not counted in the collector's telemetry")
	require.Eventually(t, func() bool {
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "\twarn\t") && strings.Contains(l, `"exporter": "otlp_http (metrics)"`) &&
				strings.Contains(l, `"refused": `) && !strings.Contains(l, `"refused": 0`) {
				return true
			}
		}
		return false
	}, 30*time.Second, time.Second, "delivery_watch does not say the queue refused points")

	// The backend is back: every acknowledged point must arrive.
	sink.start(t)
	assert.Eventually(t, func() bool { return sink.probesReceived(acked) == len(acked) }, 120*time.Second, time.Second,
		"points acknowledged with HTTP 200 did not all reach the backend")
	assert.Equal(t, len(acked), sink.probesReceived(acked), "acknowledged points delivered")
}

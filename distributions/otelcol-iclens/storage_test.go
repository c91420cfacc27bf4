package otelcoliclens_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/filedamage"
	"github.com/otelcol-iclens/otelcol-iclens/internal/syncbuf"
)

// otlpExample is the shipped OTLP example: otlp_http with its persistent sending_queue in
// file_storage.
var otlpExample = filepath.Join("..", "..", "examples", "otlp-vendor", "config.yaml")

// otlpExampleEnv is the environment the OTLP example needs in a test: its OTLP receiver on ports of
// the test's own, so that tests running side by side (t.Parallel) do not share 4317 and 4318.
func otlpExampleEnv(t *testing.T, env ...string) []string {
	t.Helper()
	return append(env, "ICLENS_OTLP_GRPC_ENDPOINT="+freeAddr(t), "ICLENS_OTLP_HTTP_ENDPOINT="+freeAddr(t))
}

// queueFile is where file_storage keeps otlp_http's metrics queue (contrib filestorage v0.165.1
// extension.go GetClient: kind_type_name_signal).
const queueFile = "exporter_otlp_http__metrics"

// telemetrySum sums the samples of name in the collector's own telemetry at addr (0 when it
// cannot be read or has none).
func telemetrySum(addr, name string, labels ...string) float64 {
	body, err := httpGet("http://" + addr + "/metrics")
	if err != nil {
		return 0
	}
	var n float64
	for _, v := range sampleValues(body, name, labels...) {
		n += v
	}
	return n
}

func httpGet(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// fillQueueOffline runs the OTLP example on the simulated node with its backend away until the
// metrics queue's file holds at least minBytes, then stops it (SIGTERM) and returns the file.
func fillQueueOffline(t *testing.T, bin string, args, env []string, state string, minBytes int64) string {
	t.Helper()
	logs := &syncbuf.Buffer{}
	col := runCollector(t, bin, args, env, logs)
	path := filepath.Join(state, queueFile)
	require.Eventually(t, func() bool {
		fi, err := os.Stat(path)
		return err == nil && fi.Size() >= minBytes
	}, 90*time.Second, 500*time.Millisecond, "the queue's file did not reach %d bytes with the backend away", minBytes)
	require.NoError(t, col.stop(30*time.Second), "clean shutdown with a queue on disk")
	return path
}

// TestDamagedQueueFile: the queue's file is damaged while the collector is down, in the two
// ways the built collector met (truncated to 64 KiB: bbolt's freelist rebuild panicked, 3 of 3
// starts; overwritten at random: "invalid database" naming no file). The collector must start
// anyway, name the file, keep it aside for inspection, and deliver through a new queue.
func TestDamagedQueueFile(t *testing.T) {
	t.Parallel() // waits on the clock, not the CPU (Makefile E2E_PARALLEL)
	if testing.Short() {
		t.Skip("runs the collector three times")
	}
	bin := collectorBinary(t)
	for _, tt := range filedamage.Cases {
		t.Run(tt.Name, func(t *testing.T) {
			sink := newOTLPSink(t)
			sink.stop(t) // the backend is away while the queue fills
			state := t.TempDir()
			args := []string{"--config", otlpExample, "--config", simulatedNodeOverlay(t)}
			env := otlpExampleEnv(t, "OTLP_ENDPOINT=http://"+sink.addr, "OTLP_TOKEN=test", "HOSTNAME="+outageHost,
				"STATE_DIRECTORY="+state, "ICLENS_TELEMETRY_PORT="+port(t, freeAddr(t)))
			// Larger than 64 KiB, so that truncating it loses pages its meta page still counts.
			path := fillQueueOffline(t, bin, args, env, state, 256<<10)
			tt.Damage(t, path)

			sink.start(t)
			logs := &syncbuf.Buffer{}
			col := runCollector(t, bin, args, env, logs)
			require.Eventually(t, func() bool { return len(sink.newest(t)) > 0 }, 60*time.Second, 500*time.Millisecond,
				"no point reached the backend after the restart on a damaged queue:\n%s", logs)
			select {
			case err := <-col.exited:
				col.exited <- err
				t.Fatalf("the collector exited: %v\n%s", err, logs)
			default:
			}
			log := logs.String()
			assert.Contains(t, log, "Storage file is damaged")
			assert.Contains(t, log, path, "the damaged file is named")
			assert.Contains(t, log, `"requests_readable": `, "what of the queue could still be read is counted")
			aside, err := filepath.Glob(path + ".*.damaged")
			require.NoError(t, err)
			assert.Len(t, aside, 1, "the damaged file is kept for inspection")
		})
	}
}

// TestOutageSaidAcrossRestarts: an OTLP backend outage that the collector is restarted in,
// twice: once while the backend is still away, once after it came back and before the queue
// was drained. delivery_watch (the example's, its state in file_storage) must say the outage
// failing once, say at the second start that it goes on, and say its recovery in the third
// process, which sees the queue drain, with the outage's whole length. Before the fix each
// process started afresh: the second said the outage again, the third never said it ended.
func TestOutageSaidAcrossRestarts(t *testing.T) {
	t.Parallel() // waits on the clock, not the CPU (Makefile E2E_PARALLEL)
	if testing.Short() {
		t.Skip("runs the collector three times")
	}
	bin := collectorBinary(t)
	sink := newOTLPSink(t)
	state := t.TempDir()
	args := []string{"--config", otlpExample, "--config", simulatedNodeOverlay(t)}
	env := otlpExampleEnv(t, "OTLP_ENDPOINT=http://"+sink.addr, "OTLP_TOKEN=test", "HOSTNAME="+outageHost,
		"STATE_DIRECTORY="+state, "ICLENS_TELEMETRY_PORT="+port(t, freeAddr(t)))
	const failing, goesOn, recovered = "Exporter sends are failing", "were failing when the collector stopped", "Exporter sends recovered"

	// 1: healthy for a while (delivery_watch learns the queue's healthy level: batched in the
	// queue, up to flush_timeout's worth of points), then the backend goes away and the queue
	// grows until delivery_watch says so.
	logs1 := &syncbuf.Buffer{}
	col := runCollector(t, bin, args, env, logs1)
	require.Eventually(t, func() bool { return len(sink.newest(t)) > 0 }, 30*time.Second, 500*time.Millisecond, "no point reached the backend")
	time.Sleep(12 * time.Second) // six checks of the healthy queue
	sink.stop(t)
	start := time.Now()
	require.Eventually(t, func() bool { return strings.Contains(logs1.String(), failing) }, 90*time.Second, 500*time.Millisecond,
		"no warning that the sends are failing while the backend is away")
	require.NoError(t, col.stop(30*time.Second))

	// 2: restarted while the backend is still away, for six checks (2 s each, the overlay's).
	logs2 := &syncbuf.Buffer{}
	col = runCollector(t, bin, args, env, logs2)
	require.Eventually(t, func() bool { return telemetryQueue(env) > 0 }, 30*time.Second, 500*time.Millisecond, "the queue is read")
	time.Sleep(12 * time.Second)
	require.NoError(t, col.stop(30*time.Second))
	assert.True(t, strings.Contains(logs2.String(), goesOn), "the second process does not say it starts inside the outage")
	assert.False(t, strings.Contains(logs2.String(), failing), "the outage is said failing again: once per process, not once")

	// 3: the backend is back; the restarted collector drains the queue and says the recovery.
	sink.start(t)
	logs3 := &syncbuf.Buffer{}
	runCollector(t, bin, args, env, logs3)
	metricsRecovered := func() string {
		for _, l := range strings.Split(logs3.String(), "\n") {
			if strings.Contains(l, recovered) && strings.Contains(l, `"exporter": "otlp_http (metrics)"`) {
				return l
			}
		}
		return ""
	}
	require.Eventually(t, func() bool { return metricsRecovered() != "" }, 60*time.Second, 500*time.Millisecond,
		"the recovery of the metrics queue's outage, begun two processes ago, is not said")
	line := metricsRecovered()
	m := regexp.MustCompile(`"outage": "([^"]+)"`).FindStringSubmatch(line)
	require.Len(t, m, 2, line)
	outage, err := time.ParseDuration(m[1])
	require.NoError(t, err)
	assert.GreaterOrEqual(t, outage, time.Since(start)-30*time.Second, "the outage's length spans the restarts: %s", line)
}

// telemetryQueue is otlp_http's metrics queue as the collector's telemetry (env's port) says it.
func telemetryQueue(env []string) float64 {
	if p := envValue(env, "ICLENS_TELEMETRY_PORT"); p != "" {
		return telemetrySum("127.0.0.1:"+p, "otelcol_exporter_queue_size", `exporter="otlp_http"`, `data_type="metrics"`)
	}
	return 0
}

// envValue is key's value in env, the last one where it repeats (as os/exec passes it), or "".
func envValue(env []string, key string) string {
	v := ""
	for _, e := range env {
		if s, ok := strings.CutPrefix(e, key+"="); ok {
			v = s
		}
	}
	return v
}

package otelcoliclens_test

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/syncbuf"
)

// zeros is an io.Reader of n '0' bytes.
type zeros struct{ n int }

func (z *zeros) Read(b []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	k := min(len(b), z.n)
	for i := range b[:k] {
		b[i] = '0'
	}
	z.n -= k
	return k, nil
}

// TestCompressedRecordingBomb: a gzip-compressed rnic recording of about 100 KiB whose one
// record decompresses to 100 MiB (a bomb, or a corrupt file) must fail the replay's start with
// an error naming the file, and the collector must never hold the decompressed record: its peak
// resident set (getrusage ru_maxrss of the exited process) stays under 200 MiB. The collector
// before the fix decoded the whole file at start (a 3 MB bomb took it past 6 GiB in 28 s).
func TestCompressedRecordingBomb(t *testing.T) {
	bin := collectorBinary(t)
	dir := t.TempDir()
	bomb := filepath.Join(dir, "bomb-rnic.jsonl.gz")
	f, err := os.Create(bomb)
	require.NoError(t, err)
	gz := gzip.NewWriter(f)
	_, err = io.WriteString(gz, `{"format":"otelcol-iclens/recording","version":1,"receiver":"rnic","created":"2026-11-29T10:00:00Z","interval":"1s"}`+"\n"+
		`{"t":"2026-11-29T10:00:00Z","files":{"sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data":"`)
	require.NoError(t, err)
	_, err = io.Copy(gz, &zeros{n: 100 << 20})
	require.NoError(t, err)
	_, err = io.WriteString(gz, "\"}}\n")
	require.NoError(t, err)
	require.NoError(t, gz.Close())
	require.NoError(t, f.Close())

	cfg := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, `receivers:
  rnic/replay:
    collection_interval: 1s
    recording: {replay: %q}
exporters:
  debug: {verbosity: basic}
service:
  pipelines:
    metrics: {receivers: [rnic/replay], exporters: [debug]}
  telemetry: {metrics: {level: none}}
`, bomb), 0o644))
	logs := &syncbuf.Buffer{}
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err = <-exited:
	case <-time.After(90 * time.Second): // what it waits for: the replay's Start to refuse the file
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("the collector still runs on a 100 MiB record; peak RSS %d KiB\n%s", maxRSSKiB(cmd), tail(logs.String()))
	}
	require.Error(t, err, "a replay that cannot be read fails the collector's start")
	log := logs.String()
	assert.Contains(t, log, bomb, "the error names the file")
	assert.Contains(t, log, "longer than 16777216 bytes", "the error says why")
	rss := maxRSSKiB(cmd)
	t.Logf("peak RSS %d KiB", rss)
	assert.Less(t, rss, int64(200<<10), "peak RSS (KiB): one bounded record, never the decompressed file")
}

func maxRSSKiB(cmd *exec.Cmd) int64 {
	if cmd.ProcessState == nil {
		return 0
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss // KiB on Linux (getrusage(2))
	}
	return 0
}

func tail(s string) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(len(lines)-20, 0):], "\n")
}

package recording

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testHeader = `{"format":"otelcol-iclens/recording","version":1,"receiver":"rnic","created":"2026-11-29T10:00:00Z","interval":"1s"}` + "\n"

// endless is a line that never ends: 'a' bytes, as many as are asked for, up to limit; read
// counts them.
type endless struct{ read, limit int }

func (e *endless) Read(b []byte) (int, error) {
	if e.read >= e.limit {
		return 0, io.EOF
	}
	n := min(len(b), e.limit-e.read)
	for i := range b[:n] {
		b[i] = 'a'
	}
	e.read += n
	return n, nil
}

// TestRecordSizeBounded: a record line longer than MaxRecordBytes (here one of 3 x that, as a
// gzip bomb decompresses to) is refused once MaxRecordBytes have been read, naming the line,
// never read whole into memory.
func TestRecordSizeBounded(t *testing.T) {
	body := &endless{limit: 3 * MaxRecordBytes}
	_, err := Decode(io.MultiReader(strings.NewReader(testHeader), body))
	require.Error(t, err)
	assert.ErrorContains(t, err, fmt.Sprintf("record 2: line 2: longer than %d bytes", MaxRecordBytes))
	assert.Less(t, body.read, MaxRecordBytes+(1<<20), "stops reading at the bound")
}

// TestGzipBombRefusedAtStart: a 100 MiB record compressed to about 100 KiB fails OpenReplay,
// naming the file, with the allocations of one bounded record.
func TestGzipBombRefusedAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bomb-rnic.jsonl.gz")
	f, err := os.Create(path)
	require.NoError(t, err)
	gz := gzip.NewWriter(f)
	_, err = io.WriteString(gz, testHeader+`{"t":"2026-11-29T10:00:00Z","files":{"x":"`)
	require.NoError(t, err)
	_, err = io.Copy(gz, &endless{limit: 100 << 20})
	require.NoError(t, err)
	require.NoError(t, gz.Close())
	require.NoError(t, f.Close())

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = OpenReplay(path, "rnic", false)
	runtime.ReadMemStats(&after)
	require.Error(t, err)
	assert.ErrorContains(t, err, path)
	assert.ErrorContains(t, err, "longer than")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4*MaxRecordBytes), "allocated bytes: one bounded record, not the decompressed file")
}

// writeLong writes a recording of n one-file samples at path.
func writeLong(t testing.TB, path string, n int) {
	t.Helper()
	w, err := Create(path, Header{Receiver: "rnic", Interval: Duration(time.Second)})
	require.NoError(t, err)
	require.NoError(t, w.Write(Record{Time: t0, Tree: []Entry{{Path: "sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data", Data: Text("0\n")}}}))
	for i := range n {
		require.NoError(t, w.Write(Record{Time: t0.Add(time.Duration(i) * time.Second), Files: map[string]string{
			"sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data": fmt.Sprintf("%d\n", i*4096),
		}}))
	}
	require.NoError(t, w.Close())
}

// TestReplayStreams: opening the replay of a long recording (100,000 samples, about 10 MB)
// allocates what a few records take, not the file.
func TestReplayStreams(t *testing.T) {
	path := filepath.Join(t.TempDir(), "long-rnic.jsonl")
	writeLong(t, path, 100_000)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	p, err := OpenReplay(path, "rnic", true)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	defer p.Close()
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(fi.Size()/10), "allocated at start: a few records, not the %d-byte file", fi.Size())
}

// TestStreamedLoop: a streamed replay gives the samples in order and, looping, reads the file
// again: the second lap's first sample comes one interval after the first lap's last.
func TestStreamedLoop(t *testing.T) {
	const n = 50
	path := filepath.Join(t.TempDir(), "short-rnic.jsonl.gz")
	writeLong(t, path, n)
	p, err := OpenReplay(path, "rnic", true)
	require.NoError(t, err)
	defer p.Close()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var lastReplayed time.Time
	for i := range n + 2 {
		r, ok, err := p.Next(now)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, fmt.Sprintf("%d\n", (i%n)*4096), r.Files["sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data"], "sample %d", i)
		switch i {
		case n - 1:
			lastReplayed = p.Time(r.Time)
		case n:
			assert.Equal(t, 1, p.Laps())
			assert.Equal(t, lastReplayed.Add(time.Second), p.Time(r.Time))
		}
	}
}

// BenchmarkReplay: a replay's allocations per sample (B/op, allocs/op) and its heap at start,
// for a recording of 100,000 samples: go test -run '^$' -bench Replay -benchmem ./internal/recording/
func BenchmarkReplay(b *testing.B) {
	path := filepath.Join(b.TempDir(), "long-rnic.jsonl.gz")
	writeLong(b, path, 100_000)
	p, err := OpenReplay(path, "rnic", true)
	require.NoError(b, err)
	defer p.Close()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	now := time.Now()
	for b.Loop() {
		if _, _, err := p.Next(now); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MiB-at-start")
}

// TestLateScrapeReadsTheSampleDue: a scrape that comes late (its ticks skipped on a busy
// machine) reads the sample recorded for its time, as a live receiver reads counters that went on
// counting, and the file holds that sample's value; on time, early or a little late, every scrape
// reads the next sample. Looping, the pace carries over into the next lap.
func TestLateScrapeReadsTheSampleDue(t *testing.T) {
	const n = 10
	path := filepath.Join(t.TempDir(), "paced-rnic.jsonl")
	writeLong(t, path, n)
	p, err := OpenReplay(path, "rnic", true)
	require.NoError(t, err)
	defer p.Close()
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	counter := filepath.Join(p.Root(), "sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data")
	var got []int
	// Scrape times in seconds from the first: on time, 0.9 s late, early, 3.4 s late (three ticks
	// skipped), on time again, and across the lap's end (a lap is n samples plus one interval).
	for _, s := range []float64{0, 1, 2.9, 3.2, 7.4, 8, 9, 10.3, 12.6, 13} {
		r, ok, err := p.Next(start.Add(time.Duration(s * float64(time.Second))))
		require.NoError(t, err)
		require.True(t, ok)
		i := int(p.Time(r.Time).Sub(start) / time.Second)
		b, err := os.ReadFile(counter)
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("%d\n", (i%n)*4096), string(b), "the tree holds the sample returned (%d)", i)
		got = append(got, i)
	}
	assert.Equal(t, []int{0, 1, 2, 3, 7, 8, 9, 10, 12, 13}, got)
	assert.Equal(t, 4, p.Skipped(), "samples 4, 5, 6 and 11 were never read")
	assert.Equal(t, 1, p.Laps())
}

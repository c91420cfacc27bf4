package recording

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRingKeepsTheLastWindow: ten scrapes a second into a 3 s ring keep the newest three seconds
// and the scrape before them, the tree whole (a later Tree's entry replacing the earlier one's,
// as a replay applies them), and write a recording that opens and replays as any other.
func TestRingKeepsTheLastWindow(t *testing.T) {
	r := NewRing(3*time.Second, 1<<20)
	t0 := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	require.NoError(t, r.Write(Record{Time: t0, Tree: []Entry{
		{Path: "sys/class/infiniband", Dir: true},
		{Path: "sys/class/infiniband/mlx5_0/ports/1/rate", Data: ptr("200 Gb/sec (4X HDR)\n")},
	}}))
	for i := 1; i <= 10; i++ {
		at := t0.Add(time.Duration(i) * time.Second)
		if i == 5 {
			require.NoError(t, r.Write(Record{Time: at, Tree: []Entry{
				{Path: "sys/class/infiniband/mlx5_0/ports/1/rate", Data: ptr("400 Gb/sec (4X NDR)\n")},
			}}))
		}
		sub := &SubSamples{Period: Duration(10 * time.Millisecond)}
		sub.Add(at.Add(-10*time.Millisecond), map[string]uint64{"c": uint64(i)})
		b, err := json.Marshal(RNICSample{Bursts: sub})
		require.NoError(t, err)
		require.NoError(t, r.Write(Record{Time: at, Files: map[string]string{"c": fmt.Sprint(i)}, Sample: b}))
	}
	assert.Equal(t, 4, r.Len(), "7 s (the scrape the window starts in) to 10 s")

	path, err := r.WriteTo(filepath.Join(t.TempDir(), "capture.jsonl.gz"), Header{Receiver: "rnic", Interval: Duration(time.Second), Note: "test"})
	require.NoError(t, err)
	got, err := Open(path)
	require.NoError(t, err)
	assert.Equal(t, "test", got.Header.Note)
	s := got.Samples()
	require.Len(t, s, 4)
	assert.Equal(t, "7", s[0].Files["c"])
	assert.Equal(t, "10", s[3].Files["c"])
	var rs RNICSample
	require.NoError(t, json.Unmarshal(s[3].Sample, &rs))
	v, ok := rs.Bursts.Value(0, "c")
	assert.True(t, ok)
	assert.Equal(t, uint64(10), v, "the sub-interval passes are kept whole")

	p, err := OpenReplay(path, "rnic", false)
	require.NoError(t, err)
	defer p.Close()
	b, err := os.ReadFile(filepath.Join(p.Root(), "sys/class/infiniband/mlx5_0/ports/1/rate"))
	require.NoError(t, err)
	assert.Equal(t, "400 Gb/sec (4X NDR)\n", string(b), "the newest tree entry")
}

// TestRingBoundedInBytes: samples larger than the bound leave one sample, the newest.
func TestRingBoundedInBytes(t *testing.T) {
	r := NewRing(time.Hour, 100)
	t0 := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	big := string(make([]byte, 80))
	for i := range 5 {
		require.NoError(t, r.Write(Record{Time: t0.Add(time.Duration(i) * time.Second), Files: map[string]string{"f": big}}))
	}
	assert.Equal(t, 1, r.Len())
}

func TestRingEmpty(t *testing.T) {
	r := NewRing(time.Second, 1<<20)
	require.NoError(t, r.Write(Record{Time: time.Now(), Tree: []Entry{{Path: "sys", Dir: true}}}))
	_, err := r.WriteTo(filepath.Join(t.TempDir(), "c.jsonl"), Header{Receiver: "rnic"})
	assert.ErrorIs(t, err, ErrRingEmpty)
}

func ptr(s string) *string { return &s }

package recording

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpenReplay(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "rnic.jsonl")
	writeRecording(t, good)

	p, err := OpenReplay(good, "rnic", false)
	require.NoError(t, err)
	assert.Equal(t, "rnic", p.Header().Receiver)
	require.NoError(t, p.Close())

	_, err = OpenReplay(good, "gpu", false)
	assert.EqualError(t, err, `recording `+good+` is of the "rnic" receiver, not gpu`)

	missing := filepath.Join(dir, "missing.jsonl")
	_, err = OpenReplay(missing, "rnic", false)
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), missing)

	empty := filepath.Join(dir, "empty.jsonl")
	w, err := CreateFor(empty, "gpu", time.Second)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	_, err = OpenReplay(empty, "gpu", false)
	assert.EqualError(t, err, "recording "+empty+": recording has no samples")
}

func TestCreateForHeader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gpu.jsonl")
	w, err := CreateFor(path, "gpu", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, w.Write(Record{Time: t0, Sample: []byte(`{}`)}))
	require.NoError(t, w.Close())
	rec, err := Open(path)
	require.NoError(t, err)
	assert.Equal(t, "gpu", rec.Header.Receiver)
	assert.Equal(t, Duration(10*time.Second), rec.Header.Interval)
}

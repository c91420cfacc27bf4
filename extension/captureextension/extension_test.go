package captureextension

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/otelcol-iclens/otelcol-iclens/extension/captureextension/internal/metadata"
	"github.com/otelcol-iclens/otelcol-iclens/internal/capture"
)

// fakeSource writes a file where it is asked to, or fails.
type fakeSource struct {
	err   error
	notes []string
}

func (f *fakeSource) WriteCapture(path, note string) (string, error) {
	if f.err != nil {
		return "", f.err
	}
	f.notes = append(f.notes, note)
	return path, os.WriteFile(path, []byte(note), 0o600)
}

type host struct {
	component.Host
	exts map[component.ID]component.Component
}

func (h host) GetExtensions() map[component.ID]component.Component { return h.exts }

func newTestExtension(t *testing.T, cfg *Config) (*captureExtension, *time.Time) {
	t.Helper()
	e := newCaptureExtension(cfg, extensiontest.NewNopSettings(metadata.Type))
	now := time.Date(2026, 12, 3, 20, 0, 0, 0, time.UTC)
	e.now = func() time.Time { return now }
	require.NoError(t, e.Start(context.Background(), componenttest.NewNopHost()))
	return e, &now
}

// TestTriggerWritesEveryRing: one file per registered ring, named by the trigger's time and the
// receiver, with the reason passed on; a failing ring costs its own file only; an unregistered
// ring is not asked.
func TestTriggerWritesEveryRing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "captures")
	e, _ := newTestExtension(t, &Config{Directory: dir, MaxFiles: 20, MinInterval: time.Minute})
	ok, bad, gone := &fakeSource{}, &fakeSource{err: errors.New("the ring has no sample yet")}, &fakeSource{}
	e.Register(component.MustNewIDWithName("rnic", "fabric"), ok)
	e.Register(component.MustNewID("cpuuncore"), bad)
	e.Register(component.MustNewID("gpu"), gone)()

	got, err := e.Trigger(context.Background(), "fabric_congestion on node1")
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, capture.Written{Source: "cpuuncore", Err: "the ring has no sample yet"}, got[0])
	assert.Equal(t, capture.Written{Source: "rnic/fabric", Path: filepath.Join(dir, "20261203T200000.000Z-rnic_fabric.jsonl.gz")}, got[1])
	assert.Equal(t, []string{"fabric_congestion on node1"}, ok.notes)
	assert.Empty(t, gone.notes)
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "the readings are the operator's")
}

// TestTriggerMinInterval: a trigger within min_interval of the previous is refused; one after it
// writes again.
func TestTriggerMinInterval(t *testing.T) {
	e, now := newTestExtension(t, &Config{Directory: t.TempDir(), MaxFiles: 20, MinInterval: time.Minute})
	src := &fakeSource{}
	e.Register(component.MustNewID("rnic"), src)
	_, err := e.Trigger(context.Background(), "a")
	require.NoError(t, err)
	*now = now.Add(59 * time.Second)
	_, err = e.Trigger(context.Background(), "b")
	assert.ErrorIs(t, err, capture.ErrTooSoon)
	*now = now.Add(time.Second)
	_, err = e.Trigger(context.Background(), "c")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "c"}, src.notes)
}

// TestPruneKeepsMaxFiles: after each write the directory keeps the newest max_files of the
// extension's recordings and leaves every other file alone.
func TestPruneKeepsMaxFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o600))
	e, now := newTestExtension(t, &Config{Directory: dir, MaxFiles: 3})
	e.Register(component.MustNewID("rnic"), &fakeSource{})
	for range 5 {
		_, err := e.Trigger(context.Background(), "x")
		require.NoError(t, err)
		*now = now.Add(time.Minute)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, de := range entries {
		names = append(names, de.Name())
	}
	assert.Equal(t, []string{"20261203T200200.000Z-rnic.jsonl.gz", "20261203T200300.000Z-rnic.jsonl.gz",
		"20261203T200400.000Z-rnic.jsonl.gz", "notes.txt"}, names)
}

// TestFindInHost: a component finds the extension by id, and is told which id is missing or is
// not a capture extension.
func TestFindInHost(t *testing.T) {
	e, _ := newTestExtension(t, createDefaultConfig().(*Config))
	id, other := component.MustNewID("capture"), component.MustNewID("file_storage")
	h := host{exts: map[component.ID]component.Component{id: e, other: nopComponent{}}}
	hub, err := capture.Find(h, id)
	require.NoError(t, err)
	assert.Same(t, e, hub)
	_, err = capture.Find(h, component.MustNewIDWithName("capture", "b"))
	assert.ErrorContains(t, err, `"capture/b" is not configured`)
	_, err = capture.Find(h, other)
	assert.ErrorContains(t, err, `"file_storage" is not a capture extension`)
}

// nopComponent is an extension that is not a capture extension.
type nopComponent struct{}

func (nopComponent) Start(context.Context, component.Host) error { return nil }
func (nopComponent) Shutdown(context.Context) error              { return nil }

func TestStartRefusesAFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(f, nil, 0o600))
	e := newCaptureExtension(&Config{Directory: f, MaxFiles: 1}, extensiontest.NewNopSettings(metadata.Type))
	assert.ErrorContains(t, e.Start(context.Background(), componenttest.NewNopHost()), "is not a directory")
}

func TestValidate(t *testing.T) {
	assert.EqualError(t, (&Config{MaxFiles: 0, MinInterval: -time.Second}).Validate(),
		"directory: must name where the recordings go, got \"\"\nmax_files: must be at least 1, got 0\nmin_interval: must not be negative, got -1s")
	assert.NoError(t, (&Config{Directory: "d", MaxFiles: 1}).Validate())
}

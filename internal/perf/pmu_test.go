package perf

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// TestLoadPMU reads a PMU laid out as the Intel uncore driver writes it (uncore.c/uncore.h):
// type and cpumask with a newline, format files with a newline, event files without one, and
// .scale/.unit next to the event (SKX uncore_imc, uncore_snbep.c hswep_uncore_imc_events).
func TestLoadPMU(t *testing.T) {
	devices := filepath.Join(t.TempDir(), "devices")
	dir := filepath.Join(devices, "uncore_imc_0")
	write(t, filepath.Join(dir, "type"), "13\n")
	write(t, filepath.Join(dir, "cpumask"), "0,28\n")
	for f, v := range map[string]string{"event": "config:0-7", "umask": "config:8-15", "edge": "config:18", "inv": "config:23", "thresh": "config:24-31"} {
		write(t, filepath.Join(dir, "format", f), v+"\n")
	}
	write(t, filepath.Join(dir, "events", "cas_count_read"), "event=0x04,umask=0x03")
	write(t, filepath.Join(dir, "events", "cas_count_read.scale"), "6.103515625e-5")
	write(t, filepath.Join(dir, "events", "cas_count_read.unit"), "MiB")
	write(t, filepath.Join(dir, "events", "clockticks"), "event=0x00,umask=0x00")
	write(t, filepath.Join(dir, "events", "bad"), "event=0x04,nosuch=1")
	write(t, filepath.Join(dir, "events", "badscale"), "event=0x04")
	write(t, filepath.Join(dir, "events", "badscale.scale"), "-1")
	write(t, filepath.Join(devices, "software", "type"), "1\n")

	names, err := ListPMUs(devices)
	require.NoError(t, err)
	assert.Equal(t, []string{"software", "uncore_imc_0"}, names)

	r := &sysfs.Reader{}
	p, err := LoadPMU(r, dir)
	require.NoError(t, err)
	assert.Equal(t, "uncore_imc_0", p.Name)
	assert.Equal(t, uint32(13), p.Type)
	assert.Equal(t, []int{0, 28}, p.CPUs)
	assert.Len(t, p.Formats, 5)
	assert.Equal(t, 8, p.Formats["thresh"].Width())

	ev, err := p.Event(r, "cas_count_read")
	require.NoError(t, err)
	assert.Equal(t, Attr{Type: 13, Config: 0x0304}, ev.Attr)
	bpc, ok := ev.BytesPerCount()
	assert.True(t, ok)
	assert.Equal(t, 64.0, bpc)

	ev, err = p.Event(r, "clockticks")
	require.NoError(t, err)
	assert.Equal(t, 1.0, ev.Scale)
	assert.Empty(t, ev.Unit)
	assert.True(t, p.HasEvent("clockticks"))
	assert.False(t, p.HasEvent("cas_count_write"))

	_, err = p.Event(r, "bad")
	assert.ErrorContains(t, err, `PMU uncore_imc_0 has no format field "nosuch"`)
	assert.ErrorContains(t, err, filepath.Join(dir, "events", "bad"))
	_, err = p.Event(r, "badscale")
	assert.ErrorContains(t, err, "bad scale")
	_, err = p.Event(r, "missing")
	assert.ErrorContains(t, err, filepath.Join(dir, "events", "missing"), "the error names the file")

	sw, err := LoadPMU(r, filepath.Join(devices, "software"))
	require.NoError(t, err)
	assert.Empty(t, sw.CPUs, "no cpumask: not an uncore PMU")

	_, err = LoadPMU(r, filepath.Join(devices, "gone"))
	assert.Error(t, err)

	names, err = ListPMUs(filepath.Join(devices, "nothing-here"))
	assert.NoError(t, err, "no event_source directory at all (no perf support) is not an error")
	assert.Empty(t, names)
}

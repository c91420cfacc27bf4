package recording

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func writeRecording(t *testing.T, path string) {
	t.Helper()
	w, err := Create(path, Header{Receiver: "rnic", Host: "node1", Interval: Duration(time.Second), Note: "test"})
	require.NoError(t, err)
	require.NoError(t, w.Write(Record{Time: t0, Tree: []Entry{
		{Path: "sys/devices/pci0000:3a/0000:3b:00.0/infiniband/mlx5_0/ports/1/counters/port_xmit_data", Data: Text("0\n")},
		{Path: "sys/devices/pci0000:3a/0000:3b:00.0/config", B64: []byte{0x86, 0x80, 0xff, 0x00}},
		{Path: "sys/class/infiniband/mlx5_0", Link: "../../devices/pci0000:3a/0000:3b:00.0/infiniband/mlx5_0"},
		{Path: "sys/class/net", Dir: true},
	}}))
	for i := range 3 {
		r := Record{Time: t0.Add(time.Duration(i) * time.Second), Files: map[string]string{
			"sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data": strings.Repeat("1", i+1) + "\n",
		}}
		if i == 1 {
			r.Errors = map[string]string{"sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data": "EINVAL"}
			r.Sample = json.RawMessage(`{"ethtool":{"eth0":{"rx_prio3_pause":7}}}`)
		}
		require.NoError(t, w.Write(r))
	}
	require.NoError(t, w.Close())
}

func TestRoundTrip(t *testing.T) {
	for _, name := range []string{"r.jsonl", "r.jsonl.gz"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			writeRecording(t, path)
			rec, err := Open(path)
			require.NoError(t, err)
			assert.Equal(t, Format, rec.Header.Format)
			assert.Equal(t, Version, rec.Header.Version)
			assert.Equal(t, "node1", rec.Header.Host)
			assert.Equal(t, Duration(time.Second), rec.Header.Interval)
			require.Len(t, rec.Records, 4)
			assert.Len(t, rec.Samples(), 3)
			assert.Equal(t, []byte{0x86, 0x80, 0xff, 0x00}, rec.Records[0].Tree[1].B64, "binary content survives")
			assert.JSONEq(t, `{"ethtool":{"eth0":{"rx_prio3_pause":7}}}`, string(rec.Records[2].Sample))
		})
	}
}

func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other.jsonl")
	require.NoError(t, os.WriteFile(other, []byte(`{"format":"something-else","version":1}`+"\n"), 0o644))
	_, err := Open(other)
	assert.ErrorContains(t, err, "not an otelcol-iclens recording")
	assert.ErrorContains(t, err, other)

	newer := filepath.Join(dir, "newer.jsonl")
	require.NoError(t, os.WriteFile(newer, []byte(`{"format":"otelcol-iclens/recording","version":99}`+"\n"), 0o644))
	_, err = Open(newer)
	assert.ErrorContains(t, err, "version 99 is not supported")
}

// A node that crashed while writing leaves a partial last line: the rest is still replayable.
func TestTruncatedRecording(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	writeRecording(t, path)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b[:len(b)-20], 0o644))
	rec, err := Open(path)
	require.NoError(t, err)
	assert.Len(t, rec.Samples(), 2)
}

func TestSnapshotAndMaterialize(t *testing.T) {
	src := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(src, "sys/devices/pci0000:3a/0000:3b:00.0/infiniband/mlx5_0/ports/1"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "sys/devices/pci0000:3a/0000:3b:00.0/infiniband/mlx5_0/ports/1/state"), []byte("4: ACTIVE\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "sys/devices/pci0000:3a/0000:3b:00.0/config"), []byte{0, 0xff, 0xfe}, 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(src, "sys/class/infiniband"), 0o755))
	require.NoError(t, os.Symlink("../../devices/pci0000:3a/0000:3b:00.0/infiniband/mlx5_0", filepath.Join(src, "sys/class/infiniband/mlx5_0")))
	require.NoError(t, os.Symlink("../../../0000:3b:00.0", filepath.Join(src, "sys/devices/pci0000:3a/0000:3b:00.0/infiniband/mlx5_0/device")))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(src, "sys/class/infiniband/outside")))

	entries, err := Snapshot(src, []string{"sys/class/infiniband"}, nil)
	require.NoError(t, err)
	paths := map[string]Entry{}
	for _, e := range entries {
		paths[e.Path] = e
	}
	assert.Contains(t, paths, "sys/devices/pci0000:3a/0000:3b:00.0/infiniband/mlx5_0/ports/1/state", "the link target is followed")
	assert.Contains(t, paths, "sys/devices/pci0000:3a/0000:3b:00.0/config", "the device link leads to the PCI function")
	assert.NotContains(t, paths, "sys/class/infiniband/outside", "a link out of the root is not recorded: a replay would refuse it")
	assert.NotContains(t, paths, "etc/passwd", "nothing outside the root is copied")

	dst := t.TempDir()
	require.NoError(t, Materialize(dst, entries))
	b, err := os.ReadFile(filepath.Join(dst, "sys/class/infiniband/mlx5_0/ports/1/state"))
	require.NoError(t, err)
	assert.Equal(t, "4: ACTIVE\n", string(b), "reached through the recreated link")
	b, err = os.ReadFile(filepath.Join(dst, "sys/class/infiniband/mlx5_0/device/config"))
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0xff, 0xfe}, b)

	assert.Error(t, Materialize(dst, []Entry{{Path: "../escape", Data: Text("x")}}))
}

func TestPlayer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	writeRecording(t, path)
	rec, err := Open(path)
	require.NoError(t, err)
	p, err := NewPlayer(rec, "", true)
	require.NoError(t, err)
	defer p.Close()
	counter := filepath.Join(p.Root(), "sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data")

	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var values []string
	for i := range 7 {
		r, ok, err := p.Next(now.Add(time.Duration(i) * time.Second))
		require.NoError(t, err)
		require.True(t, ok)
		b, err := os.ReadFile(counter)
		require.NoError(t, err)
		values = append(values, strings.TrimSpace(string(b)))
		if i%3 == 1 { // the second sample of each lap recorded an EINVAL
			assert.ErrorIs(t, p.Fault(filepath.Join(p.Root(), "sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data")), syscall.EINVAL)
			assert.NotNil(t, r.Sample)
		} else {
			assert.NoError(t, p.Fault(filepath.Join(p.Root(), "sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data")))
		}
		if i == 4 {
			// Second lap: recorded t0+1s maps to the anchor plus one recording length (3 s).
			assert.Equal(t, now.Add(4*time.Second), p.Time(r.Time))
		}
	}
	assert.Equal(t, []string{"1", "11", "111", "1", "11", "111", "1"}, values)
	assert.Equal(t, 2, p.Laps())
	assert.Equal(t, 3, p.Trees(), "the tree is materialized once per lap: a replaying receiver discovers again")
	assert.Equal(t, now.Add(6*time.Second), p.Time(t0), "after two laps recorded time is 2 x 3 s later")

	once, err := NewPlayer(rec, t.TempDir(), false)
	require.NoError(t, err)
	for range 3 {
		_, ok, err := once.Next(now)
		require.NoError(t, err)
		require.True(t, ok)
	}
	_, ok, err := once.Next(now)
	require.NoError(t, err)
	assert.False(t, ok, "a non-looping replay ends")
}

// TestMaterializeConfined: a crafted recording's links (absolute, escaping with "..", or escaping
// only from where a link above them really leads) are refused naming the record, and nothing is
// written outside the replay directory.
func TestMaterializeConfined(t *testing.T) {
	for name, tc := range map[string]struct {
		entries []Entry
		record  string
	}{
		"absolute": {[]Entry{{Path: "sys/evil", Link: "/anywhere"}, {Path: "sys/evil/x", Data: Text("1")}}, "sys/evil"},
		"dotdot":   {[]Entry{{Path: "sys/up", Link: "../../.."}, {Path: "sys/up/x", Data: Text("1")}}, "sys/up"},
		"down-up":  {[]Entry{{Path: "sys/a", Link: "b/../../.."}}, "sys/a"},
		// sys/a/b/shallow leads to sys; sys/a/b/shallow/x/esc climbs 3 from sys/x, not from
		// sys/a/b/shallow/x: out of the tree although its lexical path says otherwise.
		"through-link": {[]Entry{
			{Path: "sys/a/b", Dir: true},
			{Path: "sys/a/b/shallow", Link: "../.."},
			{Path: "sys/a/b/shallow/x/esc", Link: "../../.."},
		}, "sys/a/b/shallow/x/esc"},
	} {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "replay")
			require.NoError(t, os.Mkdir(dir, 0o755))
			err := Materialize(dir, tc.entries)
			require.Error(t, err)
			assert.Contains(t, err.Error(), fmt.Sprintf("record %q", tc.record))
			entries, _ := os.ReadDir(parent)
			assert.Len(t, entries, 1, "nothing written beside the replay directory")
		})
	}
	// The sysfs-shaped links of a real tree are accepted.
	dir := t.TempDir()
	require.NoError(t, Materialize(dir, []Entry{
		{Path: "sys/devices/pci0000:00/0000:00:01.0/infiniband/mlx5_0/fw_ver", Data: Text("22.1")},
		{Path: "sys/class/infiniband/mlx5_0", Link: "../../devices/pci0000:00/0000:00:01.0/infiniband/mlx5_0"},
	}))
	b, err := os.ReadFile(filepath.Join(dir, "sys/class/infiniband/mlx5_0/fw_ver"))
	require.NoError(t, err)
	assert.Equal(t, "22.1", string(b))
}

// TestCreateNeverClobbers: a link planted at the recording's path is not followed, a restart keeps
// the earlier recording (the new one gets a numbered name that keeps .gz), and the file is 0600
// even under umask 000.
func TestCreateNeverClobbers(t *testing.T) {
	setUmask(t, 0)
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	require.NoError(t, os.WriteFile(victim, []byte("keep"), 0o644))
	path := filepath.Join(dir, "node1-rnic.jsonl.gz")
	require.NoError(t, os.Symlink(victim, path))

	w, err := Create(path, Header{Receiver: "rnic"})
	require.NoError(t, err)
	require.NoError(t, w.Close())
	assert.Equal(t, filepath.Join(dir, "node1-rnic.1.jsonl.gz"), w.Path())
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "keep", string(b), "the planted link was not followed")
	fi, err := os.Stat(w.Path())
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "0600 under umask 000")
	_, err = Open(w.Path())
	require.NoError(t, err, "the numbered name is still read as gzip")

	// A restart: the earlier recording stays as it was.
	before, err := os.ReadFile(w.Path())
	require.NoError(t, err)
	w2, err := Create(path, Header{Receiver: "rnic"})
	require.NoError(t, err)
	require.NoError(t, w2.Close())
	assert.Equal(t, filepath.Join(dir, "node1-rnic.2.jsonl.gz"), w2.Path())
	after, err := os.ReadFile(w.Path())
	require.NoError(t, err)
	assert.Equal(t, before, after)
}

package recording

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Recordings are handed over by operators and read as untrusted input (FORMAT.md). Seeds in
// testdata/fuzz/<Fuzz...>/ besides the f.Add ones; `make fuzz` runs each for a bounded number of inputs.

// FuzzDecode: any bytes decode to a recording or an error, never a panic.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"format":"otelcol-iclens/recording","version":1,"receiver":"rnic","created":"2026-01-01T00:00:00Z","interval":"1s"}
{"t":"2026-01-01T00:00:00Z","tree":[{"path":"sys/class/infiniband","dir":true}]}
{"t":"2026-01-01T00:00:01Z","files":{"sys/x":"1"},"errors":{"sys/y":"EINVAL"},"sample":{"ethtool":{"eth0":{"rx_pause":1}}}}
`))
	f.Add([]byte(`{"format":"otelcol-iclens/recording","version":2}`))
	f.Add([]byte(`{"format":"x"}`))
	f.Add([]byte(`{"format":"otelcol-iclens/recording","version":1,"interval":"-5h"}` + "\n" + `{"t":"bad"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := Decode(bytes.NewReader(b))
		if err == nil {
			_ = rec.Samples()
			var s RNICSample
			for _, r := range rec.Records {
				_ = json.Unmarshal(r.Sample, &s)
			}
		}
	})
}

// FuzzMaterialize: whatever a tree record holds, nothing is created outside the replay
// directory (the directory beside it stays alone).
func FuzzMaterialize(f *testing.F) {
	f.Add("sys/class/infiniband/mlx5_0", "../../devices/pci0000:00/mlx5_0", "sys/devices/pci0000:00/mlx5_0/fw_ver", "22.1")
	f.Add("sys/evil", "/tmp", "sys/evil/x", "1")
	f.Add("sys/up", "../../..", "sys/up/x", "1")
	f.Add("sys/a", "b/../../..", "sys/a/x", "1")
	f.Add("sys/a/b/s", "../..", "sys/a/b/s/x/../../../y", "1")
	f.Fuzz(func(t *testing.T, linkPath, target, filePath, data string) {
		parent := t.TempDir()
		dir := filepath.Join(parent, "replay")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		_ = Materialize(dir, []Entry{
			{Path: "sys", Dir: true},
			{Path: linkPath, Link: target},
			{Path: filePath, Data: &data},
		})
		entries, err := os.ReadDir(parent)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 {
			t.Fatalf("Materialize(%q -> %q, %q) wrote beside the replay directory", linkPath, target, filePath)
		}
	})
}

// FuzzPlayerFiles: a sample's file paths and values are written inside the replay directory only.
func FuzzPlayerFiles(f *testing.F) {
	f.Add("sys/x", "1")
	f.Add("../x", "1")
	f.Add("sys/link/x", "1")
	f.Add("/etc/x", "1")
	f.Fuzz(func(t *testing.T, path, value string) {
		parent := t.TempDir()
		dir := filepath.Join(parent, "replay")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t0 := time.Unix(0, 0)
		rec := &Recording{Records: []Record{
			{Time: t0, Tree: []Entry{{Path: "sys/x", Data: Text("0")}, {Path: "sys/link", Link: "."}}},
			{Time: t0, Files: map[string]string{path: value}},
		}}
		p, err := NewPlayer(rec, dir, false)
		if err != nil {
			return
		}
		defer p.Close()
		_, _, _ = p.Next(time.Now())
		entries, err := os.ReadDir(parent)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 {
			t.Fatalf("sample file %q written beside the replay directory", path)
		}
	})
}

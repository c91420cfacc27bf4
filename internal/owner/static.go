package owner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
)

// StaticConfig turns the static file source on: owners an operator (or a tool of its own) writes
// down for anything the other sources do not see. The file is re-read on every refresh.
type StaticConfig struct {
	Enabled bool   `mapstructure:"enabled"`
	Path    string `mapstructure:"path"`
}

// staticFile is the file's format:
//
//	devices:
//	  - device: GPU-5e0a...   # a GPU UUID, GPU index, RDMA device name or PCI address
//	    job_id: "4711"
//	    user: alice
//	    partition: gpu
//	  - device: mlx5_3
//	    namespace: ml
//	    pod: trainer-0
//	    container: main
type staticFile struct {
	Devices []struct {
		Device    string `yaml:"device"`
		JobID     string `yaml:"job_id"`
		User      string `yaml:"user"`
		Partition string `yaml:"partition"`
		Namespace string `yaml:"namespace"`
		Pod       string `yaml:"pod"`
		Container string `yaml:"container"`
	} `yaml:"devices"`
}

type staticSource struct{ cfg StaticConfig }

func (s *staticSource) name() Source { return SourceStatic }

func (s *staticSource) close() error { return nil }

func (s *staticSource) collect(_ context.Context, inv *Inventory) (Claims, map[string]error, error) {
	b, err := sysfs.ReadFile(s.cfg.Path, 1<<20)
	if err != nil {
		return nil, nil, fmt.Errorf("static.path: %w", err)
	}
	var f staticFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("static.path %s: %w", s.cfg.Path, err)
	}
	claims := Claims{}
	problems := map[string]error{}
	for i, d := range f.Devices {
		key := s.cfg.Path + ": devices[" + strconv.Itoa(i) + "]"
		var o Owner
		switch {
		case d.Pod != "" && d.JobID == "":
			o = Owner{Kind: KindPod, Source: SourceStatic, Namespace: d.Namespace, Pod: d.Pod, Container: d.Container}
		case d.JobID != "" && d.Pod == "":
			o = Owner{Kind: KindJob, Source: SourceStatic, JobID: d.JobID, User: d.User, Partition: d.Partition}
		default:
			problems[key] = fmt.Errorf("needs either pod or job_id, got pod %q job_id %q", d.Pod, d.JobID)
			continue
		}
		addr := staticDevice(inv, d.Device)
		if addr == "" {
			problems[key] = fmt.Errorf("device: names no GPU or RDMA device of this node, got %q", d.Device)
			continue
		}
		claims.add(addr, o)
	}
	return claims, problems, nil
}

// staticDevice accepts every name the other sources use: a PCI address or GPU id (as a device
// plugin gives it), a GPU index, an RDMA device name.
func staticDevice(inv *Inventory, name string) string {
	if r := inv.rdmaBy(func(r *RDMA) bool { return r.Name == name }); r != nil {
		return r.Address
	}
	addr, err := resolveDeviceID(inv, name, true)
	if err != nil {
		return ""
	}
	return addr
}

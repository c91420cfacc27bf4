package owner

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/pci"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
)

// SlurmConfig turns the Slurm mapping-directory source on.
type SlurmConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// MappingDir is the directory a prolog writes and an epilog empties: what dcgm-exporter's
	// --hpc-job-mapping-dir / DCGM_HPC_JOB_MAPPING_DIR names (internal/pkg/transformation/hpc.go),
	// so existing prologs work unchanged. No default, as there: it is the site's prolog's choice. A file per GPU index (0, 1, ...; <index>.<gpu instance> for MIG), one job id a
	// line; and, for NICs, a file per RDMA device (mlx5_0) or PCI address in the same format.
	// A line may add the job's user and partition after the id: "4711 alice gpu".
	MappingDir string `mapstructure:"mapping_dir"`
}

// maxMappingFile bounds what is read of one mapping file: a few job ids, never a log.
const maxMappingFile = 64 << 10

// gpuMappingFile is dcgm-exporter's validGPUFile: <GPU index> or <GPU index>.<GPU instance>.
var gpuMappingFile = regexp.MustCompile(`^(\d+)(\.\d+)?$`)

// slurmJobID is a Slurm job id as SLURM_JOB_ID prints it, an array task (<job>_<task>) or a
// heterogeneous component (<job>+<offset>) as squeue shows them.
var slurmJobID = regexp.MustCompile(`^[0-9]+([_+][0-9]+)?$`)

type slurmSource struct{ cfg SlurmConfig }

func (s *slurmSource) name() Source { return SourceSlurm }

func (s *slurmSource) close() error { return nil }

// collect reads every mapping file. A file that cannot be read or holds garbage is a problem of
// that file alone: its device gets no owner, every other file counts.
func (s *slurmSource) collect(_ context.Context, inv *Inventory) (Claims, map[string]error, error) {
	entries, err := os.ReadDir(s.cfg.MappingDir)
	if err != nil {
		return nil, nil, fmt.Errorf("slurm.mapping_dir: %w", err)
	}
	claims := Claims{}
	problems := map[string]error{}
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue // a prolog's temporary file or a subdirectory
		}
		path := filepath.Join(s.cfg.MappingDir, e.Name())
		addr := s.device(inv, e.Name())
		if addr == "" {
			problems[path] = errors.New("names no GPU index, RDMA device or PCI address of this node")
			continue
		}
		owners, err := readMappingFile(path)
		if err != nil {
			problems[path] = err
			continue
		}
		for _, o := range owners {
			claims.add(addr, o)
		}
	}
	return claims, problems, nil
}

// device maps a mapping file's name to a PCI address; "" when it names nothing of this node.
func (s *slurmSource) device(inv *Inventory, name string) string {
	if m := gpuMappingFile.FindStringSubmatch(name); m != nil {
		index, _ := strconv.Atoi(m[1])
		if g := inv.gpuBy(func(g *GPU) bool { return g.Index == index }); g != nil {
			return g.Address
		}
		return ""
	}
	if a := pci.NormaliseAddress(name); a != "" {
		if r := inv.rdmaBy(func(r *RDMA) bool { return r.Address == a }); r != nil {
			return r.Address
		}
	}
	if r := inv.rdmaBy(func(r *RDMA) bool { return r.Name == name }); r != nil {
		return r.Address
	}
	return ""
}

// readMappingFile reads one job a line; blank lines are skipped, anything else that is not a job
// id makes the whole file (that one device) unknown rather than half-believed.
func readMappingFile(path string) ([]Owner, error) {
	b, err := sysfs.ReadFile(path, maxMappingFile)
	if err != nil {
		return nil, err
	}
	var out []Owner
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if !slurmJobID.MatchString(f[0]) || len(f) > 3 {
			return nil, fmt.Errorf("line %d: not \"<job id> [user [partition]]\", got %q", line, truncate(sc.Text(), 64))
		}
		o := Owner{Kind: KindJob, Source: SourceSlurm, JobID: f[0]}
		if len(f) > 1 {
			o.User = f[1]
		}
		if len(f) > 2 {
			o.Partition = f[2]
		}
		out = append(out, o)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w (a line longer than %d bytes)", err, bufio.MaxScanTokenSize)
	}
	return out, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

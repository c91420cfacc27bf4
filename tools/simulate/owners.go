package simulate

import (
	"os"
	"path/filepath"
	"strconv"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
)

// WriteSlurmMapping writes the owners of the two-job node (scenario.TwoJobStream) at sample i as
// a Slurm prolog leaves them for the owner receiver's slurm source: dcgm-exporter's HPC mapping
// directory (internal/pkg/transformation/hpc.go), a file per GPU index holding its job id, GPUs
// 0-3 job 4711's, GPUs 4-7 job 4712's and, from sample switchAt on, 4713's. The NICs need no file:
// the resolver gives each NIC the single owner of the GPUs it is nearest to. Each file is written
// under a dot-name and renamed, as a prolog should, so that a refresh never reads half a file.
func WriteSlurmMapping(dir string, i, switchAt int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for j := range 2 {
		for k := range scenario.JobGPUs {
			index := strconv.Itoa(scenario.JobGPUs*j + k)
			tmp := filepath.Join(dir, "."+index+".tmp")
			if err := os.WriteFile(tmp, []byte(scenario.JobOwner(j, i, switchAt)+"\n"), 0o644); err != nil {
				return err
			}
			if err := os.Rename(tmp, filepath.Join(dir, index)); err != nil {
				return err
			}
		}
	}
	return nil
}

package ncclreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/ncclreceiver"

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nvidiaproc"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
)

// processEnv reads the variables of /proc/<pid>/environ that say which GPU the process uses.
func processEnv(procRoot string, pid int64) (map[string]string, error) {
	return sysfs.ProcEnviron(filepath.Join(procRoot, strconv.FormatInt(pid, 10), "environ"), "CUDA_VISIBLE_DEVICES", "LOCAL_RANK", "SLURM_LOCALID")
}

// visibleGPUs applies CUDA_VISIBLE_DEVICES to the driver's list as the CUDA runtime does: a
// comma-separated list of indices or GPU UUIDs (or unique UUID prefixes) renumbers the devices
// 0, 1, ... in the order listed, and the first entry that names no device ends the list (CUDA C
// Programming Guide, "CUDA Environment Variables"). A MIG instance (MIG-...) is not a GPU of the
// list: it and what follows are left out. Unset means every GPU.
func visibleGPUs(all []nvidiaproc.GPU, cvd string, set bool) []nvidiaproc.GPU {
	if !set {
		return all
	}
	var out []nvidiaproc.GPU
	for item := range strings.SplitSeq(cvd, ",") {
		item = strings.TrimSpace(item)
		var found *nvidiaproc.GPU
		if i, err := strconv.Atoi(item); err == nil {
			if i >= 0 && i < len(all) {
				found = &all[i]
			}
		} else if strings.HasPrefix(item, "GPU-") {
			for j := range all {
				if strings.HasPrefix(all[j].UUID, item) {
					if found != nil { // an ambiguous prefix names no device
						found = nil
						break
					}
					found = &all[j]
				}
			}
		}
		if found == nil {
			break
		}
		out = append(out, *found)
	}
	return out
}

// gpuOfProcess names the PCI address of the GPU an NCCL process drives, or "" with the reason.
// The Inspector's JSON records carry no device (inspector_json.cc inspectorCommInfoHeader), so the
// process's environment decides: one visible GPU is that GPU; with several, the launcher's local
// rank (LOCAL_RANK from torchrun, else SLURM_LOCALID) picks among them, which is what a job does
// when it calls cudaSetDevice(local_rank) / torch.cuda.set_device(local_rank).
func gpuOfProcess(procRoot string, pid int64, all []nvidiaproc.GPU) (string, error) {
	if len(all) == 0 {
		return "", fmt.Errorf("no GPU in %s", filepath.Join(procRoot, "driver", "nvidia", "gpus"))
	}
	env, err := processEnv(procRoot, pid)
	if err != nil {
		return "", err
	}
	cvd, set := env["CUDA_VISIBLE_DEVICES"]
	vis := visibleGPUs(all, cvd, set)
	switch {
	case len(vis) == 1:
		return vis[0].Address, nil
	case len(vis) == 0:
		return "", fmt.Errorf("pid %d: CUDA_VISIBLE_DEVICES=%q names no GPU of the driver's list", pid, cvd)
	}
	for _, k := range []string{"LOCAL_RANK", "SLURM_LOCALID"} {
		if v, ok := env[k]; ok {
			i, err := strconv.Atoi(v)
			if err != nil || i < 0 || i >= len(vis) {
				return "", fmt.Errorf("pid %d: %s=%q is not one of its %d visible GPUs", pid, k, v, len(vis))
			}
			return vis[i].Address, nil
		}
	}
	return "", fmt.Errorf("pid %d sees %d GPUs and has no LOCAL_RANK or SLURM_LOCALID to pick one", pid, len(vis))
}

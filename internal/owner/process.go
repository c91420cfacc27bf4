package owner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
)

// ProcessConfig turns the bare-metal source on: the processes that hold a GPU open give it the
// job they run in. The processes are found without NVML, by their open /dev/nvidia<minor> files
// (/proc/<pid>/fd), which needs the host's PID namespace and the right to read other users'
// fd links and environ (CAP_SYS_PTRACE, fs/proc/base.c proc_fd_access_allowed / environ_open).
// NVML's process list would also see MPS clients; what the fd scan cannot see is a process behind
// the MPS server (its fds are the server's) and MIG instances (one /dev/nvidia<minor> per GPU).
type ProcessConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// JobIDEnv are the environment variables that hold a job id, the first one set wins.
	JobIDEnv []string `mapstructure:"job_id_env"`
	// UserEnv and PartitionEnv name the job's user and partition.
	UserEnv      string `mapstructure:"user_env"`
	PartitionEnv string `mapstructure:"partition_env"`
}

func defaultProcessConfig() ProcessConfig {
	// The variables slurmstepd sets in every task (src/slurmd/slurmstepd/slurmstepd_job.c and
	// env.c setup_env: SLURM_JOB_ID, SLURM_JOB_USER, SLURM_JOB_PARTITION).
	return ProcessConfig{JobIDEnv: []string{"SLURM_JOB_ID"}, UserEnv: "SLURM_JOB_USER", PartitionEnv: "SLURM_JOB_PARTITION"}
}

func (c ProcessConfig) validate() error {
	if len(c.JobIDEnv) == 0 {
		return errors.New("process.job_id_env: must name at least one variable, got []")
	}
	return nil
}

// slurmCgroupJob finds the job in a Slurm task's cgroup path: cgroup v2
// /system.slice/slurmstepd.scope/job_<id>/step_<n>/... and v1 .../slurm/uid_<u>/job_<id>/...
// (src/plugins/cgroup/v2/cgroup_v2.c, cgroup/v1/cgroup_v1.c).
var slurmCgroupJob = regexp.MustCompile(`/job_([0-9]+)(/|$)`)

// nvidiaDevice is a GPU's character device (/dev/nvidia<minor>); nvidiactl, nvidia-uvm and
// nvidia-caps are not GPUs.
var nvidiaDevice = regexp.MustCompile(`^/dev/nvidia([0-9]+)$`)

// maxJobID bounds a job id read from a process's environment: an id, not a blob.
const maxJobID = 128

type processSource struct {
	cfg  ProcessConfig
	proc string
}

func newProcessSource(cfg ProcessConfig, root string) *processSource {
	return &processSource{cfg: cfg, proc: filepath.Join(root, "proc")}
}

func (p *processSource) name() Source { return SourceProcess }

func (p *processSource) close() error { return nil }

func (p *processSource) collect(ctx context.Context, inv *Inventory) (Claims, map[string]error, error) {
	names, err := sysfs.ListDir(p.proc)
	if err != nil || len(names) == 0 {
		return nil, nil, fmt.Errorf("process: cannot list %s: %v", p.proc, err)
	}
	claims := Claims{}
	problems := map[string]error{}
	for _, name := range names {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if _, err := strconv.Atoi(name); err != nil {
			continue
		}
		dir := filepath.Join(p.proc, name)
		gpus := p.gpusOpen(inv, dir)
		if len(gpus) == 0 {
			continue
		}
		o, err := p.owner(dir)
		if err != nil {
			problems[dir] = err
			continue
		}
		if !o.Known() {
			continue // a process outside any job (a node daemon): no claim
		}
		for _, addr := range gpus {
			claims.add(addr, o)
		}
	}
	return claims, problems, nil
}

// gpusOpen returns the GPUs whose device files the process holds open. A process gone or not
// readable holds none for us.
func (p *processSource) gpusOpen(inv *Inventory, dir string) []string {
	fds, _ := sysfs.ListDir(filepath.Join(dir, "fd"))
	var out []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(dir, "fd", fd))
		if err != nil {
			continue
		}
		m := nvidiaDevice.FindStringSubmatch(target)
		if m == nil {
			continue
		}
		minor, _ := strconv.Atoi(m[1])
		if g := inv.gpuBy(func(g *GPU) bool { return g.Minor == minor }); g != nil && !slices.Contains(out, g.Address) {
			out = append(out, g.Address)
		}
	}
	return out
}

// owner reads the job from the environment (/proc/<pid>/environ, NUL-separated, fs/proc/base.c
// environ_read) and else from the cgroup (/proc/<pid>/cgroup, "hierarchy:controllers:path").
func (p *processSource) owner(dir string) (Owner, error) {
	o := Owner{Kind: KindJob, Source: SourceProcess}
	if vars, err := sysfs.ProcEnviron(filepath.Join(dir, "environ")); err == nil {
		for _, k := range p.cfg.JobIDEnv {
			if v := vars[k]; v != "" {
				o.JobID = v
				break
			}
		}
		o.User, o.Partition = vars[p.cfg.UserEnv], vars[p.cfg.PartitionEnv]
	}
	if o.JobID == "" {
		cg, err := sysfs.ReadFile(filepath.Join(dir, "cgroup"), 64<<10)
		if err != nil {
			return Owner{}, nil // gone, or not ours to read
		}
		for _, line := range strings.Split(string(cg), "\n") {
			if m := slurmCgroupJob.FindStringSubmatch(line); m != nil {
				o.JobID = m[1]
				break
			}
		}
	}
	if o.JobID == "" {
		return Owner{}, nil
	}
	if len(o.JobID) > maxJobID {
		return Owner{}, fmt.Errorf("job id longer than %d bytes, got %q", maxJobID, truncate(o.JobID, 64))
	}
	return o, nil
}

package owner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// ScontrolConfig turns the scontrol source on: the GPUs' jobs from Slurm's own allocation
// (`scontrol show job -d`: each running job's per-node detail lines name the GRES indices it
// holds, `GRES=gpu:h100:4(IDX:0-3)`), for sites without a prolog that writes a mapping directory.
// Meta's GCM reads Slurm the same way (its slurmprocessor, which caches the answer for 60 s; here it
// is read every refresh_interval).
type ScontrolConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// Command is what is run, its output the text of `scontrol show job -d` (one job a paragraph
	// or, with --oneliner, a line; both are read).
	Command []string `mapstructure:"command"`
	// NodeName is this node's name in Slurm (slurmd -N, the NodeName of slurm.conf); empty: the
	// host name, as slurmd defaults to it.
	NodeName string `mapstructure:"node_name"`
	// Timeout bounds one run: a slurmctld that does not answer costs one refresh this long, and
	// its devices have no owner from it until it answers again.
	Timeout time.Duration `mapstructure:"timeout"`
}

func defaultScontrolConfig() ScontrolConfig {
	return ScontrolConfig{Command: []string{"scontrol", "show", "job", "-d"}, Timeout: 5 * time.Second}
}

func (c ScontrolConfig) validate() error {
	var errs []error
	if len(c.Command) == 0 || c.Command[0] == "" {
		errs = append(errs, fmt.Errorf("scontrol.command: must name a program, got %q", c.Command))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("scontrol.timeout: must be positive, got %v", c.Timeout))
	}
	return errors.Join(errs...)
}

// maxScontrolOutput bounds what is read of one answer: a cluster's whole job list with details is
// a few kB a job.
const maxScontrolOutput = 32 << 20

// jobLister is where the jobs come from: the command, or a test's fixture.
type jobLister interface {
	showJobs(ctx context.Context) ([]byte, error)
}

type commandLister struct{ cfg ScontrolConfig }

func (l commandLister) showJobs(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, l.cfg.Command[0], l.cfg.Command[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	b, readErr := io.ReadAll(io.LimitReader(out, maxScontrolOutput+1))
	waitErr := cmd.Wait()
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("scontrol.command: no answer within %v", l.cfg.Timeout)
	case waitErr != nil:
		return nil, fmt.Errorf("scontrol.command: %w: %s", waitErr, truncate(strings.TrimSpace(stderr.String()), 200))
	case readErr != nil:
		return nil, readErr
	case len(b) > maxScontrolOutput:
		return nil, fmt.Errorf("scontrol.command: answer longer than %d bytes", maxScontrolOutput)
	}
	return b, nil
}

type scontrolSource struct {
	cfg  ScontrolConfig
	node string
	jobs jobLister
}

func newScontrolSource(cfg ScontrolConfig) *scontrolSource {
	node := cfg.NodeName
	if node == "" {
		node, _ = os.Hostname()
		// slurmd's default NodeName is the short host name (gethostname up to the first dot).
		node, _, _ = strings.Cut(node, ".")
	}
	return &scontrolSource{cfg: cfg, node: node, jobs: commandLister{cfg}}
}

func (s *scontrolSource) name() Source { return SourceSlurm }

func (s *scontrolSource) close() error { return nil }

// collect claims each GPU index a running job holds on this node for that job. A job whose
// detail lines cannot be read is a problem of that job alone.
func (s *scontrolSource) collect(ctx context.Context, inv *Inventory) (Claims, map[string]error, error) {
	out, err := s.jobs.showJobs(ctx)
	if err != nil {
		return nil, nil, err
	}
	claims := Claims{}
	problems := map[string]error{}
	for _, j := range parseScontrolJobs(out) {
		if j.state != "RUNNING" {
			continue // pending, completing (its epilog frees the GPUs), ended
		}
		o := Owner{Kind: KindJob, Source: SourceSlurm, JobID: j.id, User: j.user, Partition: j.partition}
		for _, a := range j.allocs {
			on, err := hostlistHas(a.nodes, s.node)
			if err != nil {
				problems["scontrol job "+j.id] = err
				continue
			}
			if !on {
				continue
			}
			indices, err := gpuIndices(a.gres)
			if err != nil {
				problems["scontrol job "+j.id] = err
				continue
			}
			for _, i := range indices {
				// Slurm's GPU index is the GPU's place in gres.conf's File= order, which
				// AutoDetect=nvml writes in NVML (PCI bus) order: the inventory's Index.
				if g := inv.gpuBy(func(g *GPU) bool { return g.Index == i }); g != nil {
					claims.add(g.Address, o)
				} else {
					problems["scontrol job "+j.id] = fmt.Errorf("GRES index %d: no such GPU on this node", i)
				}
			}
		}
	}
	return claims, problems, nil
}

// scontrolJob is what a job's record says: its id as SLURM_JOB_ID names it in a mapping file
// (<array job>_<task> for an array task), user, partition, state and per-node allocations.
type scontrolJob struct {
	id, user, partition, state string
	allocs                     []scontrolAlloc
}

// scontrolAlloc is one detail line: `Nodes=<hostlist> CPU_IDs=... Mem=... GRES=<gres>`.
type scontrolAlloc struct{ nodes, gres string }

// parseScontrolJobs reads `scontrol show job -d` as key=value tokens: JobId= starts a job, Nodes=
// (a detail line's first key, not NodeList=) one of its allocations. Values with spaces (Command=,
// WorkDir=) only ever end a job's record, and no key read here follows them on their line.
func parseScontrolJobs(b []byte) []scontrolJob {
	var jobs []scontrolJob
	var j *scontrolJob
	var arrayJob, arrayTask string
	finish := func() {
		if j == nil {
			return
		}
		if arrayJob != "" && arrayTask != "" && arrayTask != "N/A" {
			j.id = arrayJob + "_" + arrayTask
		}
		jobs = append(jobs, *j)
	}
	for _, tok := range strings.Fields(string(b)) {
		k, v, ok := strings.Cut(tok, "=")
		if !ok {
			continue
		}
		if k == "JobId" {
			finish()
			j, arrayJob, arrayTask = &scontrolJob{id: v}, "", ""
			continue
		}
		if j == nil {
			continue
		}
		switch k {
		case "ArrayJobId":
			arrayJob = v
		case "ArrayTaskId":
			arrayTask = v
		case "UserId":
			j.user, _, _ = strings.Cut(v, "(") // alice(1001)
		case "Partition":
			j.partition = v
		case "JobState":
			j.state = v
		case "Nodes":
			j.allocs = append(j.allocs, scontrolAlloc{nodes: v})
		case "GRES":
			if n := len(j.allocs); n > 0 && j.allocs[n-1].gres == "" {
				j.allocs[n-1].gres = v
			}
		}
	}
	finish()
	return jobs
}

// gpuIndices are the GPU indices of a detail line's GRES: `gpu:4(IDX:0-3)`,
// `gpu:h100:2(IDX:0,2),nic:1(IDX:0)`; an allocation without GPUs has none.
func gpuIndices(gres string) ([]int, error) {
	var out []int
	for gres != "" {
		entry := gres
		// Entries are separated by commas outside the parentheses.
		if end := strings.Index(gres, ")"); end >= 0 {
			entry, gres = gres[:end+1], strings.TrimPrefix(gres[end+1:], ",")
		} else {
			gres = ""
		}
		if !strings.HasPrefix(entry, "gpu") {
			continue
		}
		_, idx, ok := strings.Cut(entry, "(IDX:")
		if !ok {
			return nil, fmt.Errorf("GRES %q: no (IDX:...) (scontrol show job needs -d)", truncate(entry, 64))
		}
		list, err := expandRanges(strings.TrimSuffix(idx, ")"))
		if err != nil {
			return nil, fmt.Errorf("GRES %q: %w", truncate(entry, 64), err)
		}
		out = append(out, list...)
	}
	return out, nil
}

// hostlistHas reports whether a Slurm hostlist (node[01-04,07],gpu2) names node.
func hostlistHas(list, node string) (bool, error) {
	for list != "" {
		var item string
		// Items are separated by commas outside the brackets.
		depth, cut := 0, len(list)
		for i, c := range list {
			if c == '[' {
				depth++
			} else if c == ']' {
				depth--
			} else if c == ',' && depth == 0 {
				cut = i
				break
			}
		}
		item, list = list[:cut], strings.TrimPrefix(list[cut:], ",")
		prefix, ranges, bracketed := strings.Cut(item, "[")
		if !bracketed {
			if item == node {
				return true, nil
			}
			continue
		}
		if !strings.HasPrefix(node, prefix) {
			continue
		}
		ranges, suffix, _ := strings.Cut(ranges, "]")
		rest := strings.TrimSuffix(strings.TrimPrefix(node, prefix), suffix)
		for _, r := range strings.Split(ranges, ",") {
			lo, hi, isRange := strings.Cut(r, "-")
			if !isRange {
				hi = lo
			}
			// The width of the first bound is the zero padding (node[01-10] is node01..node10).
			if len(rest) != len(lo) && strings.HasPrefix(lo, "0") {
				continue
			}
			n, err1 := strconv.Atoi(rest)
			a, err2 := strconv.Atoi(lo)
			b, err3 := strconv.Atoi(hi)
			if err2 != nil || err3 != nil {
				return false, fmt.Errorf("hostlist %q: bad range %q", truncate(item, 64), r)
			}
			if err1 == nil && n >= a && n <= b {
				return true, nil
			}
		}
	}
	return false, nil
}

// expandRanges expands 0-3,5 to 0 1 2 3 5.
func expandRanges(s string) ([]int, error) {
	var out []int
	for _, r := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || a > b || b-a > 4096 {
			return nil, fmt.Errorf("bad index range %q", r)
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}

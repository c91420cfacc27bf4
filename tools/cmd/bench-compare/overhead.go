//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/tools/internal/pushsink"
	"github.com/otelcol-iclens/otelcol-iclens/tools/simulate"
)

// overhead runs the distribution (its config.yaml, every receiver and processor in it) on the
// fixture node at each collection interval and reports the CPU share of one core and the memory.
// A Prometheus server is stood in for by a fetch of /metrics every 15 s (its common scrape
// interval), so the exporter's encoding is counted too. With -baseline, the same collector on a
// node without any of the hardware, at each interval, shows what the collector costs by itself
// (Go runtime, the receivers' tickers, processors, idle receivers), apart from any data. With
// -replay (the default) the cpuuncore and gpu receivers replay the simulator's recordings of a
// healthy AllReduce node, as this machine has no uncore PMU or GPU, so that every receiver works at
// the interval.
func overhead(o options, tmp, root string) error {
	type run struct {
		interval time.Duration
		root     string
		node     string
		devices  bool
		push     string        // a push path added to the distribution config (-push)
		bursts   time.Duration // the rnic receiver's bursts.period (-bursts), 0: off
	}
	var runs []run
	for s := range strings.SplitSeq(o.intervals, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d <= 0 {
			return fmt.Errorf("-intervals: bad duration %q", s)
		}
		runs = append(runs, run{d, root, "fixture (8 RoCE ports)", true, "", 0})
	}
	// Each push path (-push), at the first interval: the distribution config plus the push
	// exporter with the examples' persistent queue or write-ahead log, delivering to a sink.
	first := runs[0].interval
	for kind := range strings.SplitSeq(o.push, ",") {
		if kind = strings.TrimSpace(kind); kind != "" {
			runs = append(runs, run{first, root, "fixture, + push " + kind, true, kind, 0})
		}
	}
	// The fast sampler at each period (-bursts), at the first interval: beside runs[0], the same
	// collector without it, the difference is what the sampler costs.
	for s := range strings.SplitSeq(o.bursts, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 || d >= first {
			return fmt.Errorf("-bursts: want periods above 0 and below the first interval %s, got %q", first, s)
		}
		runs = append(runs, run{first, root, "fixture, bursts " + d.String(), true, "", d})
	}
	if o.baseline {
		empty := filepath.Join(tmp, "empty")
		if err := os.MkdirAll(empty, 0o755); err != nil {
			return err
		}
		for _, r := range slices.Clone(runs) {
			if r.push == "" && r.bursts == 0 {
				runs = append(runs, run{r.interval, empty, "no hardware (empty root)", false, "", 0})
			}
		}
	}

	// The cpuuncore and gpu receivers have nothing to read here: let them replay the simulated
	// healthy AllReduce (tools/simulate), so that the three receivers all scrape.
	var replaySets []string
	if o.replay {
		dir := filepath.Join(tmp, "recordings")
		if _, err := simulate.Write(simulate.Options{Dir: dir, Interval: time.Second, Samples: 120,
			UncoreFixture: filepath.Join("receiver", "cpuuncorereceiver", "testdata", "skx")}); err != nil {
			return fmt.Errorf("writing the recordings: %w", err)
		}
		for _, r := range []string{"cpuuncore", "gpu"} {
			file := filepath.Join(dir, "healthy_allreduce", "node1-"+r+".jsonl")
			replaySets = append(replaySets, "--set=receivers::"+r+"::recording::replay="+file, "--set=receivers::"+r+"::recording::loop=true")
		}
	}

	type row struct {
		run
		cpuPct         float64
		cpu            time.Duration
		elapsed        time.Duration
		rssKiB, hwmKiB int64
		said           []string
	}
	var rows []row
	sinks := map[int]*pushsink.Sink{}
	for i, rn := range runs {
		promAddr, err := freePort()
		if err != nil {
			return err
		}
		healthAddr, err := freePort()
		if err != nil {
			return err
		}
		// The collector's own telemetry, on by default in the distribution config, on a port of its own.
		telemetryAddr, err := freePort()
		if err != nil {
			return err
		}
		viewAddr, err := freePort()
		if err != nil {
			return err
		}
		fmt.Printf("collection interval %s, %s: measuring %s ...\n", rn.interval, rn.node, o.duration)
		// Every receiver of the distribution at the interval; the GPU receiver's DCGM sampling
		// period may not exceed it.
		args := []string{"--config", o.distConfig}
		for _, r := range []string{"rnic", "cpuuncore", "gpu"} {
			args = append(args, "--set=receivers::"+r+"::collection_interval="+rn.interval.String())
		}
		args = append(args, "--set=receivers::gpu::dcgm::sample_interval="+min(rn.interval, time.Second).String())
		if rn.devices {
			args = append(args, replaySets...)
		}
		if rn.bursts > 0 {
			args = append(args, "--set=receivers::rnic::bursts::period="+rn.bursts.String())
		}
		args = append(args, o.sets.args()...)
		if rn.push != "" {
			sk, err := pushsink.New(rn.push)
			if err != nil {
				return err
			}
			defer sk.Close()
			state := filepath.Join(tmp, fmt.Sprintf("state-%d", i))
			overlay := filepath.Join(tmp, fmt.Sprintf("push-%d.yaml", i))
			if err := os.MkdirAll(state, 0o700); err != nil {
				return err
			}
			// The push exporter instead of the Prometheus one: the configuration a node pushing
			// deploys (the Prometheus exporter's own work is in the rows above).
			if err := os.WriteFile(overlay, []byte(pushOverlay(rn.push, sk.URL, state, "memory_limiter", distributionExporters(rn.push), "health_check")), 0o644); err != nil {
				return err
			}
			args = append(args, "--config", overlay)
			sinks[i] = sk
		}
		url := "http://" + promAddr + "/metrics"
		if rn.push != "" {
			url = "" // nothing served: the sink says when data flows
		}
		p, err := start(fmt.Sprintf("otelcol-iclens-%d", i), tmp, url,
			[]string{"ICLENS_ROOT_PATH=" + rn.root, "ICLENS_PROMETHEUS_ENDPOINT=" + promAddr, "ICLENS_HEALTH_ENDPOINT=" + healthAddr, "ICLENS_LENSVIEW_ENDPOINT=" + viewAddr,
				"ICLENS_TELEMETRY_PORT=" + telemetryAddr[strings.LastIndexByte(telemetryAddr, ':')+1:]},
			append([]string{o.collector}, args...)...)
		if err != nil {
			return err
		}
		r, err := func() (row, error) {
			defer p.stop()
			want := `component="rnic"`
			if !rn.devices {
				want = "" // the exporter answers, with nothing to say
			}
			if sk := sinks[i]; sk != nil {
				if err := waitDelivered(sk, p, 60*time.Second); err != nil {
					return row{}, err
				}
			} else if err := p.waitFor(want, 60*time.Second); err != nil {
				return row{}, err
			}
			// Past start-up and discovery.
			time.Sleep(5 * time.Second)
			c0, err := p.cpu()
			if err != nil {
				return row{}, err
			}
			t0 := time.Now()
			deadline := t0.Add(o.duration)
			for time.Now().Before(deadline) {
				time.Sleep(min(15*time.Second, time.Until(deadline)))
				if p.url == "" {
					continue
				}
				if _, err := p.fetch(); err != nil {
					return row{}, err
				}
			}
			c1, err := p.cpu()
			if err != nil {
				return row{}, err
			}
			elapsed := time.Since(t0)
			r := row{run: rn, cpu: c1 - c0, elapsed: elapsed, cpuPct: 100 * float64(c1-c0) / float64(elapsed)}
			if r.rssKiB, err = p.rss(); err != nil {
				return row{}, err
			}
			if r.hwmKiB, err = p.peakRSS(); err != nil {
				return row{}, err
			}
			for _, what := range []string{"nothing to report", "No GPU metrics", "No RDMA ports"} {
				if line := firstLine(p.log, what); line != "" {
					r.said = append(r.said, line)
				}
			}
			return r, nil
		}()
		if err != nil {
			return err
		}
		rows = append(rows, r)
	}

	fmt.Println()
	printMachine()
	fmt.Printf("distribution config %s (every receiver at the interval), ICLENS_ROOT_PATH on the node, /metrics fetched every 15 s, %s measured per row\n\n", o.distConfig, o.duration)
	fmt.Printf("| %-19s | %-24s | %-16s | %-20s | %-9s | %-9s | %-17s |\n", "collection interval", "node", "CPU, % of 1 core", "CPU time / wall time", "RSS", "peak RSS", "target")
	fmt.Printf("|%s|%s|%s|%s|%s|%s|%s|\n", dashes(21), dashes(26), dashes(18), dashes(22), dashes(11), dashes(11), dashes(19))
	for _, r := range rows {
		target := "-"
		switch {
		case !r.devices:
		case r.bursts > 0:
		case r.interval == time.Second:
			target = verdict(r.cpuPct < 0.1) + " (<0.1%)"
		case r.interval == 100*time.Millisecond:
			target = verdict(r.cpuPct < 1) + " (<1%)"
		}
		fmt.Printf("| %-19s | %-24s | %16.3f | %20s | %9s | %9s | %-17s |\n", r.interval, r.node, r.cpuPct,
			fmt.Sprintf("%s / %s", r.cpu.Round(100*time.Microsecond), r.elapsed.Round(time.Second)), mib(r.rssKiB), mib(r.hwmKiB), target)
	}
	fmt.Println("\nCPU time: the sum of the threads' run time in /proc/<pid>/task/*/schedstat (ns)")
	for _, r := range rows {
		if r.bursts > 0 && rows[0].bursts == 0 && r.interval == rows[0].interval {
			added := r.cpuPct - rows[0].cpuPct
			target := ""
			if r.bursts == 10*time.Millisecond {
				target = ", target <= 1%: " + verdict(added <= 1)
			}
			fmt.Printf("fast sampler at %s: %+.3f %% of a core beside the row without it%s\n", r.bursts, added, target)
		}
	}
	if len(rows) > 0 && len(rows[0].said) > 0 {
		fmt.Println("what the idle receivers said (first run):")
		for _, line := range rows[0].said {
			fmt.Println("  " + line)
		}
	}
	return nil
}

// firstLine returns the first line of the log file that mentions what, shortened.
func firstLine(path, what string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.Contains(line, what) {
			// zap's console format: time, level, caller, message, fields; keep the message.
			if f := strings.Split(line, "\t"); len(f) >= 4 {
				line = f[2] + ": " + f[3]
			}
			return line
		}
	}
	return ""
}

// printMachine says where the numbers come from: CPU, cores, kernel, Go, commit.
func printMachine() {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	commit := "unknown"
	if out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output(); err == nil {
		commit = strings.TrimSpace(string(out))
		if out, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(out) > 0 {
			commit += " (with uncommitted changes)"
		}
	}
	fmt.Printf("machine: %s, %d CPUs, Linux %s, %s; commit %s; %s\n", model, runtime.NumCPU(),
		strings.TrimSpace(string(kernel)), runtime.Version(), commit, time.Now().UTC().Format(time.RFC3339))
}

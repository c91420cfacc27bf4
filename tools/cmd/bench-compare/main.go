//go:build linux

// Command bench-compare measures otelcol-iclens against node_exporter on one fixture RDMA node, and
// the whole collector's overhead. It is run by `make bench-compare` and `make bench-overhead`, which
// build both binaries first (README, section Performance).
//
//	go -C tools build -o "$PWD/.tools/" ./cmd/bench-compare   # from the repository root, then:
//	.tools/bench-compare -mode compare  -node-exporter .tools/node_exporter -collector bin/otelcol-iclens
//	.tools/bench-compare -mode overhead -collector bin/otelcol-iclens
//
// Its default paths are relative to the repository root, where it runs.
//
// The fixture is testfs.BenchRDMANode: 8 mlx5 RoCE devices of one port, each with the 21 PMA
// counters, 28 hw_counters + lifespan and a netdev, written to a temporary directory. Everything
// listens on 127.0.0.1 only, and every loop is bounded.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

type options struct {
	mode         string
	push         string
	bursts       string
	nodeExporter string
	collector    string
	distConfig   string
	period       time.Duration
	scrapes      int
	rounds       int
	straceN      int
	straceWindow time.Duration
	duration     time.Duration
	intervals    string
	keep         bool
	withoutScope bool
	baseline     bool
	replay       bool
	sets         setFlags
}

// setFlags collects -set options, passed to the collector as --set (e.g. receivers::rnic::slow_interval=0s).
type setFlags []string

func (f *setFlags) String() string     { return strings.Join(*f, " ") }
func (f *setFlags) Set(v string) error { *f = append(*f, v); return nil }
func (f setFlags) args() []string {
	out := make([]string, len(f))
	for i, v := range f {
		out[i] = "--set=" + v
	}
	return out
}

func main() {
	var o options
	flag.StringVar(&o.mode, "mode", "compare", "compare (node_exporter vs the rnic receiver) or overhead (the whole collector)")
	flag.StringVar(&o.nodeExporter, "node-exporter", ".tools/node_exporter", "node_exporter binary (v1.12.1 from the Go module proxy)")
	flag.StringVar(&o.collector, "collector", "bin/otelcol-iclens", "the otelcol-iclens binary (make build)")
	flag.StringVar(&o.distConfig, "config", "distributions/otelcol-iclens/config.yaml", "overhead mode: the distribution's configuration")
	flag.DurationVar(&o.period, "period", 100*time.Millisecond, "compare mode: scrape period of both (node_exporter's /metrics fetch, the collector's collection_interval; the rnic receiver's collection_interval is at least 100ms)")
	flag.IntVar(&o.scrapes, "scrapes", 1000, "compare mode: scrapes of each program for the CPU time, split over -rounds")
	flag.IntVar(&o.rounds, "rounds", 4, "compare mode: alternating rounds (node_exporter, collector, collector, node_exporter, ...)")
	flag.IntVar(&o.straceN, "strace-scrapes", 20, "compare mode: node_exporter scrapes traced to count the files it opens")
	flag.DurationVar(&o.straceWindow, "strace-window", 30*time.Second, "compare mode: how long the collector is traced; several slow_intervals (10 s by default) so that the rarely read counters are amortized")
	flag.DurationVar(&o.duration, "duration", 60*time.Second, "overhead mode: measured time per collection interval")
	flag.StringVar(&o.intervals, "intervals", "1s,100ms", "overhead mode: collection intervals to measure")
	flag.BoolVar(&o.withoutScope, "without-scope-info", true, "compare mode: the Prometheus exporter's without_scope_info, as in the distribution's default config (no otel_scope_* labels on every sample)")
	flag.BoolVar(&o.replay, "replay", true, "overhead mode: the cpuuncore and gpu receivers replay the simulator's healthy AllReduce recordings (this machine has no uncore PMU or GPU), so all three receivers do their work")
	flag.BoolVar(&o.baseline, "baseline", true, "overhead mode: also measure the collector on a node without hardware, at each interval")
	flag.StringVar(&o.push, "push", pushRemoteWrite+","+pushOTLP, "compare mode: push paths measured in the same rounds (the rnic receiver delivering every scrape to a local sink, with the examples' write-ahead log / persistent queue); overhead mode: one push path added to the distribution config (empty: none)")
	flag.StringVar(&o.bursts, "bursts", "10ms,100ms", "overhead mode: periods of the rnic receiver's fast sampler (bursts.period), each measured at the first interval beside the row without it (empty: none)")
	flag.Var(&o.sets, "set", "a collector --set option for both modes, repeatable (receivers::rnic::slow_interval=0s reads every counter on every scrape)")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (fixture, configs, logs, strace output)")
	flag.Parse()

	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-compare:", err)
		os.Exit(2)
	}
}

// errTargets is returned when the measurement worked but the result fails the check.
type errTargets struct{ msg string }

func (e errTargets) Error() string { return e.msg }

func run(o options) error {
	tmp, err := os.MkdirTemp("", "bench-compare-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Println("temporary directory:", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	root := filepath.Join(tmp, "node")
	if err := testfs.WriteRDMANode(root, testfs.BenchRDMANode()); err != nil {
		return err
	}
	switch o.mode {
	case "compare":
		err = compare(o, tmp, root)
	case "overhead":
		err = overhead(o, tmp, root)
	default:
		return fmt.Errorf("unknown -mode %q (compare or overhead)", o.mode)
	}
	if e, ok := err.(errTargets); ok {
		fmt.Fprintln(os.Stderr, "FAIL:", e.msg)
		os.Exit(1)
	}
	return err
}

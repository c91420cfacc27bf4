// Command iclens-simulate writes recordings of the simulated 2-node cluster's cases (package
// tools/simulate) for replay by otelcol-iclens: `make demo` and the end-to-end test use it.
//
//	go -C tools run ./cmd/iclens-simulate -out "$PWD/recordings"   # from the repository root
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/tools/simulate"
)

func main() {
	out := flag.String("out", "recordings", "directory for <case>/<node>-<receiver>.jsonl")
	interval := flag.Duration("interval", time.Second, "time between samples (the replaying receivers' collection_interval)")
	samples := flag.Int("samples", 120, "samples per recording (a looping replay starts over after them)")
	fixture := flag.String("uncore-fixture", "../receiver/cpuuncorereceiver/testdata/skx", "host tree of the simulated CPUs (the default is relative to tools/, where go -C tools run runs)")
	config := flag.String("collector-config", "", "also write a collector configuration that replays every case here")
	exporter := flag.String("exporter", simulate.ExportPrometheus, "exporter of that configuration: prometheus (serve) or remote_write (push)")
	flag.Parse()
	// The cases, and those whose NCCL job the nccl receiver reads from the Inspector's dumps.
	opts := simulate.Options{Dir: *out, Interval: *interval, Samples: *samples, UncoreFixture: *fixture}
	nccl := simulate.NCCLSources{Cases: map[string]bool{}}
	// The bursty case (scenario.BurstCases) is not judged with Cases; the demo shows it.
	cases := append(scenario.Cases(), scenario.BurstCases()...)
	for _, c := range simulate.SteadyNCCLCases() {
		cases = append(cases, c)
		nccl.Cases[c.Name] = true
	}
	paths, err := simulate.WriteCases(opts, cases)
	if err == nil {
		_, err = simulate.WriteNCCL(opts)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "iclens-simulate:", err)
		os.Exit(1)
	}
	for _, c := range cases {
		fmt.Printf("%-18s %s\n", c.Name, c.Note)
	}
	fmt.Printf("%d recordings in %s, and the NCCL Inspector dumps of %d cases\n", len(paths), *out, len(nccl.Cases))
	if *config != "" {
		cfg, err := simulate.CollectorConfigWithNCCL(*out, *interval, *exporter, cases, nccl)
		if err == nil {
			err = os.WriteFile(*config, []byte(cfg), 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "iclens-simulate:", err)
			os.Exit(1)
		}
		fmt.Println("collector configuration:", *config)
	}
}

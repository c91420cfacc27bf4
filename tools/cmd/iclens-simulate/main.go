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
	paths, err := simulate.Write(simulate.Options{Dir: *out, Interval: *interval, Samples: *samples, UncoreFixture: *fixture})
	if err != nil {
		fmt.Fprintln(os.Stderr, "iclens-simulate:", err)
		os.Exit(1)
	}
	for _, c := range scenario.Cases() {
		fmt.Printf("%-18s %s\n", c.Name, c.Note)
	}
	fmt.Printf("%d recordings in %s\n", len(paths), *out)
	if *config != "" {
		cfg, err := simulate.CollectorConfig(*out, *interval, *exporter)
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

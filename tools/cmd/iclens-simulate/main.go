// Command iclens-simulate writes recordings of the simulated 2-node cluster's cases (package
// tools/simulate) for replay by otelcol-iclens: `make demo` and the end-to-end test use it.
//
//	go -C tools run ./cmd/iclens-simulate -out "$PWD/recordings"   # from the repository root
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
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
	live := flag.Bool("live", false, "then keep feeding the NCCL transitions' Inspector dumps and serve their RAS services on loopback, "+
		"one sample an interval, until interrupted (the configuration reads them)")
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
	var feed *simulate.Live
	if *live {
		for _, c := range simulate.LiveNCCLCases() {
			cases = append(cases, c)
			nccl.Cases[c.Name] = true
		}
	}
	paths, err := simulate.WriteCases(opts, cases)
	if err == nil {
		_, err = simulate.WriteNCCL(opts)
	}
	if err == nil && *live {
		// After WriteNCCL, whose whole dumps of these cases it starts over.
		feed, err = simulate.StartLive(opts, simulate.LiveNCCLCases())
		if err == nil {
			nccl.RAS = feed.RAS()
		}
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
			// Whole or not at all: `make demo` starts the collector once the file is there.
			tmp := *config + ".tmp"
			if err = os.WriteFile(tmp, []byte(cfg), 0o644); err == nil {
				err = os.Rename(tmp, *config)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "iclens-simulate:", err)
			os.Exit(1)
		}
		fmt.Println("collector configuration:", *config)
	}
	if feed != nil {
		os.Exit(runLive(feed, *interval))
	}
}

// runLive steps the live feed once an interval until SIGINT or SIGTERM, and returns the exit code.
func runLive(feed *simulate.Live, interval time.Duration) int {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	fmt.Printf("live: the NCCL transitions' dumps and RAS services (%d nodes), a sample every %s; interrupt to stop\n", len(feed.RAS()), interval)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	code := 0
	for running := true; running; {
		if err := feed.Step(time.Now()); err != nil {
			fmt.Fprintln(os.Stderr, "iclens-simulate: live:", err)
			code = 1
			break
		}
		select {
		case <-stop:
			running = false
		case <-tick.C:
		}
	}
	if err := feed.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "iclens-simulate: live:", err)
		code = 1
	}
	return code
}

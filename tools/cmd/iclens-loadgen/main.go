// Command iclens-loadgen replays N simulated nodes' OTLP into one gateway collector
// (distributions/otelcol-iclens/gateway.yaml) on loopback and measures what the gateway costs and
// how soon it names a fault: the gateway's CPU and RSS, the time from a node's fault to its
// verdict on the view, and the view's page and API load times. Each node sends what the
// simulator's model sends for one node (internal/scenario: its RDMA port and netdev, 3 IIO stacks,
// 2 memory controllers, a GPU, congestion and PFC counters, topology: 37 points), plus the owner receiver's
// interconnect.owner for the job it belongs to, one OTLP/gRPC request per node and interval,
// spread across the interval as independent nodes' sends are. Every -fault-every-th node falls
// back to TCP at sample -fault-at.
//
//	make build && go -C tools run ./cmd/iclens-loadgen -collector "$PWD/bin/otelcol-iclens" \
//	    -config "$PWD/distributions/otelcol-iclens/gateway.yaml" -nodes 128 -interval 10s
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

type options struct {
	nodes, samples, faultAt, faultEvery, jobSize, maxNodes, workers int
	interval                                                        time.Duration
	otlp, view, collector, config, logPath, chromium                string
	pid                                                             int
}

func main() {
	var o options
	flag.IntVar(&o.nodes, "nodes", 16, "simulated nodes")
	flag.DurationVar(&o.interval, "interval", 10*time.Second, "each node's collection and send interval; the gateway's diagnosis interval when -collector starts it")
	flag.IntVar(&o.faultAt, "fault-at", 6, "sample at which the faulty nodes fall back to TCP")
	flag.IntVar(&o.samples, "samples", 0, "samples per node (default: -fault-at + 6)")
	flag.IntVar(&o.faultEvery, "fault-every", 16, "every n-th node falls back to TCP (0: none)")
	flag.IntVar(&o.jobSize, "job-size", 16, "nodes per job (interconnect.owner); 0: no owner series")
	flag.IntVar(&o.maxNodes, "max-nodes", 4096, "the gateway's max_nodes (connector and view), when -collector starts it")
	flag.IntVar(&o.workers, "workers", 16, "concurrent OTLP exports")
	flag.StringVar(&o.otlp, "otlp", "127.0.0.1:14317", "the gateway's OTLP/gRPC endpoint")
	flag.StringVar(&o.view, "view", "127.0.0.1:19465", "the gateway's lensview endpoint")
	flag.StringVar(&o.collector, "collector", "", "start this collector binary with -config as the gateway (else measure the one at -pid)")
	flag.StringVar(&o.config, "config", "distributions/otelcol-iclens/gateway.yaml", "the gateway's config, with -collector")
	flag.StringVar(&o.logPath, "log", "", "the started gateway's log (default: a temporary file)")
	flag.StringVar(&o.chromium, "chromium", "", "measure the pages in this headless Chromium too (Debian's /usr/bin/chromium)")
	flag.IntVar(&o.pid, "pid", 0, "the gateway's process id, without -collector")
	flag.Parse()
	if o.samples == 0 {
		o.samples = o.faultAt + 6
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "iclens-loadgen:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.faultAt < 3 || o.samples <= o.faultAt+2 {
		return fmt.Errorf("fault-at: needs 3 samples of warm-up and samples > fault-at+2, got fault-at %d, samples %d", o.faultAt, o.samples)
	}
	fl, err := newFleet(o.nodes, o.faultEvery, o.jobSize, o.samples, o.faultAt, o.interval)
	if err != nil {
		return err
	}
	pid := o.pid
	if o.collector != "" && o.logPath == "" {
		o.logPath = filepath.Join(os.TempDir(), fmt.Sprintf("iclens-loadgen-gateway-%d.log", os.Getpid()))
	}
	if o.collector != "" {
		stop, p, err := startGateway(o)
		if err != nil {
			return err
		}
		defer stop()
		pid = p
	}
	if pid == 0 {
		return fmt.Errorf("pid: the gateway's process id is needed without -collector")
	}
	if err := waitView(o.view, time.Minute); err != nil {
		return err
	}
	conn, err := grpc.NewClient(o.otlp, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := pmetricotlp.NewGRPCClient(conn)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watch := newVerdictWatch(o.view, fl)
	go watch.run(ctx, min(time.Second, o.interval/5))

	type job struct{ node, sample int }
	jobs := make(chan job, o.nodes)
	var (
		mu        sync.Mutex
		rpc       []time.Duration
		failures  int
		faultSent = map[int]time.Time{}
	)
	var wg sync.WaitGroup
	for range o.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				at := time.Now()
				req := pmetricotlp.NewExportRequestFromMetrics(fl.metrics(j.node, j.sample, at))
				rctx, rcancel := context.WithTimeout(ctx, o.interval)
				_, err := client.Export(rctx, req)
				rcancel()
				mu.Lock()
				rpc = append(rpc, time.Since(at))
				if err != nil {
					failures++
				}
				if j.sample == o.faultAt && fl.isFaulty(j.node) {
					faultSent[j.node] = at
				}
				mu.Unlock()
			}
		}()
	}

	// CPU is measured from the third sample (the gateway's start and first nodes behind it) to
	// the end; the sender's own lateness says whether the load generator kept up.
	var cpuFrom procSample
	var cpuFromAt time.Time
	var lateMax time.Duration
	t0 := time.Now().Add(time.Second)
	// Offered: nodes/interval exports a second; achieved: what the gateway took (the sender waits
	// for a free worker, so a gateway that slows down shows here and in the sender's lateness).
	sendStart := t0
	for k := range o.samples {
		if k == 2 {
			cpuFrom, _ = readProc(pid)
			cpuFromAt = time.Now()
		}
		for i := range o.nodes {
			due := t0.Add(time.Duration(k)*o.interval + time.Duration(i)*o.interval/time.Duration(o.nodes))
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			} else {
				lateMax = max(lateMax, -d)
			}
			jobs <- job{node: i, sample: k}
		}
		fmt.Fprintf(os.Stderr, "sample %d/%d sent\n", k+1, o.samples)
	}
	close(jobs)
	wg.Wait()
	achieved := float64(o.nodes*o.samples) / time.Since(sendStart).Seconds()
	cpuTo, err := readProc(pid)
	if err != nil {
		return fmt.Errorf("the gateway (pid %d) is gone: %w", pid, err)
	}
	cpuToAt := time.Now()
	// The last faults need up to a few intervals more: the hold, and the view's poll.
	deadline := time.Now().Add(3 * o.interval)
	for time.Now().Before(deadline) && watch.detected(faultSent) < len(faultSent) {
		time.Sleep(200 * time.Millisecond)
	}
	cancel()

	waitsGot, waitsWant, waitsErr := waiting(o.view, fl)
	pages := measurePages(o.view, fl)
	var browser browserTimes
	if o.chromium != "" {
		browser = measureBrowser(o.chromium, o.view, fl)
	}
	self, _ := readProc(os.Getpid())
	cores := float64(cpuTo.ticks-cpuFrom.ticks) / clockTicks / cpuToAt.Sub(cpuFromAt).Seconds()
	lat := watch.latencies(faultSent)
	sort.Slice(rpc, func(i, j int) bool { return rpc[i] < rpc[j] })

	fmt.Printf("nodes %d, interval %s, samples %d, fault at sample %d on %d nodes, job size %d\n",
		o.nodes, o.interval, o.samples, o.faultAt, len(faultSent), o.jobSize)
	fmt.Printf("gateway cpu: %.3f cores (%.1f%% of 2) over %s; rss %.0f MiB, peak %.0f MiB\n",
		cores, 50*cores, cpuToAt.Sub(cpuFromAt).Round(time.Second), float64(cpuTo.rssKiB)/1024, float64(cpuTo.peakKiB)/1024)
	fmt.Printf("otlp exports: %d, failed %d, latency p50 %s p99 %s max %s; sender late by at most %s; %.0f exports/s offered, %.0f achieved\n",
		len(rpc), failures, pct(rpc, 50), pct(rpc, 99), pct(rpc, 100), lateMax.Round(time.Millisecond),
		float64(o.nodes)/o.interval.Seconds(), achieved)
	if len(lat) > 0 {
		fmt.Printf("fault to verdict on the view: p50 %.1f s (%.1f intervals), max %.1f s (%.1f intervals), %d of %d faulty nodes named\n",
			pctF(lat, 50), pctF(lat, 50)/o.interval.Seconds(), pctF(lat, 100), pctF(lat, 100)/o.interval.Seconds(), len(lat), len(faultSent))
	} else if len(faultSent) > 0 {
		fmt.Printf("fault to verdict: none of %d faulty nodes named within 3 intervals of the last sample\n", len(faultSent))
	}
	fmt.Printf("view: %d nodes known; %s\n", watch.nodesSeen(), pages)
	if waitsErr != nil {
		fmt.Printf("cross-node: cannot read /api/cluster: %v\n", waitsErr)
	} else {
		fmt.Printf("cross-node: %d nodes wait on a peer (waits_on_peer) at the end, %d should (the healthy members of the jobs with a faulty node)\n", waitsGot, waitsWant)
	}
	if o.chromium != "" {
		fmt.Println("view " + browser.String())
	}
	fmt.Printf("load generator itself: %.1f s of CPU\n", float64(self.ticks)/clockTicks)
	if o.collector != "" {
		fmt.Println(evictionsSaid(o.logPath))
	}
	// The table row of connector/diagnosisconnector/README.md, "Scale".
	fmt.Printf("| %d | %s | %.2f | %.0f | %.1f / %.1f | %.1f / %.1f | %s / %s | %s / %s |\n", o.nodes, o.interval, cores,
		float64(cpuTo.peakKiB)/1024, pctF(lat, 50), pctF(lat, 50)/o.interval.Seconds(), pctF(lat, 100), pctF(lat, 100)/o.interval.Seconds(),
		pages.cluster.Round(100*time.Microsecond), browser.cluster.Round(time.Millisecond), pages.node.Round(100*time.Microsecond), browser.node.Round(time.Millisecond))
	return nil
}

// startGateway runs the collector on the gateway config with the load run's endpoints and the
// diagnosis at the nodes' interval; its log goes to o.logPath.
func startGateway(o options) (stop func(), pid int, err error) {
	logFile, err := os.Create(o.logPath)
	if err != nil {
		return nil, 0, err
	}
	free := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "127.0.0.1:0"
		}
		defer l.Close()
		return l.Addr().String()
	}
	_, telemetryPort, _ := net.SplitHostPort(free())
	cmd := exec.Command(o.collector, "--config", o.config)
	cmd.Env = append(os.Environ(),
		"ICLENS_OTLP_GRPC_ENDPOINT="+o.otlp, "ICLENS_OTLP_HTTP_ENDPOINT="+free(), "ICLENS_LENSVIEW_ENDPOINT="+o.view,
		"ICLENS_PROMETHEUS_ENDPOINT="+free(), "ICLENS_HEALTH_ENDPOINT="+free(), "ICLENS_TELEMETRY_PORT="+telemetryPort,
		"ICLENS_DIAGNOSIS_INTERVAL="+o.interval.String(), "ICLENS_DIAGNOSIS_WINDOW="+(3*o.interval).String(),
		"ICLENS_LENSVIEW_RESOLUTION="+max(o.interval, time.Second).String(), "ICLENS_MAX_NODES="+strconv.Itoa(o.maxNodes))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	stopWithParent(cmd)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, 0, err
	}
	fmt.Fprintf(os.Stderr, "gateway pid %d, log %s\n", cmd.Process.Pid, o.logPath)
	return func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
		logFile.Close()
	}, cmd.Process.Pid, nil
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, len(d)*p/100)].Round(time.Millisecond)
}

func pctF(v []float64, p int) float64 {
	if len(v) == 0 {
		return 0
	}
	return v[min(len(v)-1, len(v)*p/100)]
}

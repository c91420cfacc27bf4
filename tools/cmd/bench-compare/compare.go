//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/tools/internal/pushsink"
)

// Fairness of the comparison:
//   - one fixture tree, one scrape period: node_exporter scrapes when /metrics is fetched, the
//     collector on its collection_interval, set equal to the fetch period; its Prometheus exporter
//     is fetched at the same period, so both serve the same number of HTTP answers;
//   - each program as it is configured by default for this job: node_exporter with only the
//     infiniband collector and without its own go_/process_ metrics (--web.disable-exporter-metrics),
//     the collector with the rnic receiver's default config, the Prometheus exporter and no
//     processors, and its own telemetry off;
//   - the whole process's CPU time (utime+stime of all threads), HTTP serving and encoding included;
//   - alternating rounds, the other program stopped (SIGSTOP) while one is measured, so that they
//     never compete for the two CPUs; a settling pause after each resume;
//   - files are counted by strace in a separate phase (it slows the traced process), per scrape:
//     both read port 1 of mlx5_0's state exactly once per scrape, which is the scrape counter;
//   - a third process, the same collector after a single scrape, shows what its Prometheus
//     exporter alone costs per fetch of the same series.

const collectorCompareConfig = `receivers:
  rnic:
    collection_interval: %s
    root_path: %s
exporters:
  prometheus:
    endpoint: %s
    without_scope_info: %t
service:
  pipelines:
    metrics:
      receivers: [rnic]
      exporters: [prometheus]
  telemetry:
    logs:
      level: warn
    metrics:
      level: none
`

type cpuRound struct {
	perScrape time.Duration
	scrapes   float64
}

type result struct {
	name      string
	io        fileIO
	rounds    []cpuRound
	hwmKiB    int64
	metricsLn int
	delivered int // push paths: scrapes the sink received
}

func compare(o options, tmp, root string) error {
	sys := filepath.Join(root, "sys")
	if o.rounds < 1 || o.scrapes < o.rounds {
		return fmt.Errorf("-rounds %d and -scrapes %d: need at least one scrape per round", o.rounds, o.scrapes)
	}

	neAddr, err := freePort()
	if err != nil {
		return err
	}
	ne, err := start("node_exporter", tmp, "http://"+neAddr+"/metrics", nil, o.nodeExporter,
		"--collector.disable-defaults", "--collector.infiniband", "--path.sysfs="+sys,
		"--web.listen-address="+neAddr, "--web.disable-exporter-metrics", "--log.level=warn")
	if err != nil {
		return err
	}
	defer ne.stop()

	oc, err := startCollector("otelcol-iclens", o, tmp, root, o.period)
	if err != nil {
		return err
	}
	defer oc.stop()
	// The same collector scraping once (its first collection, then not for an hour): each fetch
	// of its /metrics costs what the Prometheus exporter alone costs to serve the same series.
	ex, err := startCollector("otelcol-iclens-exporter-alone", o, tmp, root, time.Hour)
	if err != nil {
		return err
	}
	defer ex.stop()

	if err := ne.waitFor("node_infiniband_port_data_transmitted_bytes_total", 30*time.Second); err != nil {
		return err
	}
	for _, p := range []*proc{oc, ex} {
		if err := p.waitFor(`component="rnic"`, 60*time.Second); err != nil {
			return err
		}
	}
	// The push paths: the same receiver delivering every scrape to a sink, with the shipped
	// examples' delivery settings (write-ahead log, persistent queue).
	var pushes []*pushRun
	for kind := range strings.SplitSeq(o.push, ",") {
		if kind = strings.TrimSpace(kind); kind == "" {
			continue
		}
		pr, err := startPush(kind, o, tmp, root)
		if pr != nil {
			defer pr.stop()
		}
		if err != nil {
			return err
		}
		pushes = append(pushes, pr)
	}
	neRes, ocRes, exRes := &result{name: "node_exporter"}, &result{name: "otelcol-iclens"}, &result{name: "exporter alone"}
	// All must see the whole node: 8 devices with their byte counters.
	if err := sameNode(ne, `node_infiniband_port_data_transmitted_bytes_total\{device="(mlx5_\d)"`, neRes); err != nil {
		return err
	}
	for p, res := range map[*proc]*result{oc: ocRes, ex: exRes} {
		if err := sameNode(p, `interconnect_io[a-z_]*\{[^}]*component="rnic"[^}]*device="(mlx5_\d)/1"`, res); err != nil {
			return err
		}
	}

	// 1. Files per scrape, each program traced alone.
	fmt.Printf("counting opens and reads with strace: node_exporter %d scrapes, collector %s ...\n", o.straceN, o.straceWindow)
	if err := pauseAll(oc, ex); err != nil {
		return err
	}
	neRes.io, err = traceIO(ne.pid(), sys, filepath.Join(tmp, "node_exporter.strace"), func() error {
		return fetchEvery(ne, o.period, o.straceN)
	})
	if err != nil {
		return err
	}
	if neRes.io.scrapes != o.straceN {
		return fmt.Errorf("node_exporter read %s %d times in %d scrapes", scrapeMarker, neRes.io.scrapes, o.straceN)
	}
	if err := oc.resume(); err != nil {
		return err
	}
	if err := ne.pause(); err != nil {
		return err
	}
	ocRes.io, err = traceIO(oc.pid(), sys, filepath.Join(tmp, "collector.strace"), func() error {
		return fetchEvery(oc, o.period, int(o.straceWindow/o.period))
	})
	if err != nil {
		return err
	}
	if ocRes.io.scrapes == 0 {
		return fmt.Errorf("the collector did not scrape while traced (log: %s)", oc.log)
	}
	if err := resumeAll(ne, ex); err != nil {
		return err
	}

	// 2. CPU time per scrape, in rounds, each program measured with the others stopped; the
	// order turns at each round.
	per := o.scrapes / o.rounds
	fmt.Printf("CPU time: %d rounds x %d scrapes each, every %s, alternating ...\n", o.rounds, per, o.period)
	order := []*proc{ne, oc, ex}
	results := map[*proc]*result{ne: neRes, oc: ocRes, ex: exRes}
	for _, pr := range pushes {
		order = append(order, pr.proc)
		results[pr.proc] = pr.res
	}
	for r := range o.rounds {
		for i := range order {
			p := order[(i+r)%len(order)]
			var others []*proc
			for _, q := range order {
				if q != p {
					others = append(others, q)
				}
			}
			round, err := measureCPU(p, others, o.period, per, p == oc || p.url == "")
			if err != nil {
				return err
			}
			results[p].rounds = append(results[p].rounds, round)
		}
	}
	for p, res := range results {
		if res.hwmKiB, err = p.peakRSS(); err != nil {
			return err
		}
	}
	for _, pr := range pushes {
		if err := pr.checkDelivered(); err != nil {
			return err
		}
	}
	return report(o, neRes, ocRes, exRes, pushes)
}

// pushRun is a collector on a push path and its sink.
type pushRun struct {
	*proc
	sink *pushsink.Sink
	res  *result
}

func (pr *pushRun) stop() {
	pr.proc.stop()
	pr.sink.Close()
}

// startPush runs the rnic receiver at the period with the push exporter of kind only, delivering
// to a sink, and waits for its first delivery.
func startPush(kind string, o options, tmp, root string) (*pushRun, error) {
	sk, err := pushsink.New(kind)
	if err != nil {
		return nil, err
	}
	name := "otelcol-iclens-" + strings.ReplaceAll(kind, "_", "-")
	addr, err := freePort()
	if err != nil {
		sk.Close()
		return nil, err
	}
	base, overlay := filepath.Join(tmp, name+".yaml"), filepath.Join(tmp, name+"-push.yaml")
	state := filepath.Join(tmp, name+"-state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		sk.Close()
		return nil, err
	}
	if err := os.WriteFile(base, fmt.Appendf(nil, collectorCompareConfig, o.period, root, addr, o.withoutScope), 0o644); err != nil {
		sk.Close()
		return nil, err
	}
	if err := os.WriteFile(overlay, []byte(pushOverlay(kind, sk.URL, state, "", exporterOf(kind), "")), 0o644); err != nil {
		sk.Close()
		return nil, err
	}
	// No /metrics of its own to fetch: measureCPU lets it run on its own timer.
	p, err := start(name, tmp, "", nil, append([]string{o.collector, "--config", base, "--config", overlay}, o.sets.args()...)...)
	if err != nil {
		sk.Close()
		return nil, err
	}
	pr := &pushRun{proc: p, sink: sk, res: &result{name: kind}}
	return pr, waitDelivered(sk, p, 60*time.Second)
}

// waitDelivered waits for a push path's first delivery to its sink.
func waitDelivered(sk *pushsink.Sink, p *proc, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		n, err := sk.Delivered()
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		if n > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s delivered nothing within %s (log: %s)", p.name, timeout, p.log)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func exporterOf(kind string) string {
	if kind == pushRemoteWrite {
		return "prometheus_remote_write"
	}
	return kind
}

// distributionExporters are the metrics pipeline's exporters when the distribution config pushes:
// the push exporter, and the diagnosis connector, whose own pipelines (metrics/diagnosis,
// logs/diagnosis) the overlay leaves as they are and which need its input.
func distributionExporters(kind string) string {
	return exporterOf(kind) + ", diagnosis"
}

// checkDelivered waits for the queue's last read cycle (the write-ahead log sends every 5 s) and
// checks that the sink got at least every scrape the CPU time was divided by: the CPU per scrape
// is then CPU per delivered scrape.
func (pr *pushRun) checkDelivered() error {
	time.Sleep(7 * time.Second)
	n, err := pr.sink.Delivered()
	if err != nil {
		return fmt.Errorf("%s: %w", pr.name, err)
	}
	pr.res.delivered = n
	var measured float64
	for _, r := range pr.res.rounds {
		measured += r.scrapes
	}
	if float64(n) < 0.99*measured {
		return fmt.Errorf("%s delivered %d scrapes, fewer than the %.0f measured (log: %s)", pr.name, n, measured, pr.log)
	}
	return nil
}

// startCollector runs the collector with the rnic receiver at the interval and the Prometheus
// exporter (collectorCompareConfig).
func startCollector(name string, o options, tmp, root string, interval time.Duration) (*proc, error) {
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(tmp, name+".yaml")
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, collectorCompareConfig, interval, root, addr, o.withoutScope), 0o644); err != nil {
		return nil, err
	}
	return start(name, tmp, "http://"+addr+"/metrics", nil, append([]string{o.collector, "--config", cfgPath}, o.sets.args()...)...)
}

func pauseAll(ps ...*proc) error {
	for _, p := range ps {
		if err := p.pause(); err != nil {
			return err
		}
	}
	return nil
}

func resumeAll(ps ...*proc) error {
	for _, p := range ps {
		if err := p.resume(); err != nil {
			return err
		}
	}
	return nil
}

// sameNode checks that a program's answer names all 8 devices.
func sameNode(p *proc, pattern string, res *result) error {
	b, err := p.fetch()
	if err != nil {
		return err
	}
	devs := map[string]bool{}
	for _, m := range regexp.MustCompile(pattern).FindAllSubmatch(b, -1) {
		devs[string(m[1])] = true
	}
	if len(devs) != 8 {
		return fmt.Errorf("%s reports %d of the 8 devices (log: %s)", p.name, len(devs), p.log)
	}
	res.metricsLn = bytes.Count(b, []byte("\n")) - bytes.Count(b, []byte("\n#"))
	return nil
}

// fetchEvery fetches /metrics n times, one per period.
func fetchEvery(p *proc, period time.Duration, n int) error {
	t := time.NewTicker(period)
	defer t.Stop()
	for range n {
		if _, err := p.fetch(); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		<-t.C
	}
	return nil
}

// measureCPU measures one round of p with other stopped. For the collector the scrapes are its own
// collections, one per period of the measured window.
func measureCPU(p *proc, others []*proc, period time.Duration, n int, ownTimer bool) (cpuRound, error) {
	if err := pauseAll(others...); err != nil {
		return cpuRound{}, err
	}
	defer resumeAll(others...) //nolint:errcheck // the next measurement fails if a process is gone
	// Settle: a resumed ticker fires at once for the ticks it missed.
	time.Sleep(3 * period)
	c0, err := p.cpu()
	if err != nil {
		return cpuRound{}, err
	}
	t0 := time.Now()
	if p.url == "" {
		// A push path: nothing to fetch, it collects and sends on its own.
		time.Sleep(time.Duration(n) * period)
	} else if err := fetchEvery(p, period, n); err != nil {
		return cpuRound{}, err
	}
	elapsed := time.Since(t0)
	c1, err := p.cpu()
	if err != nil {
		return cpuRound{}, err
	}
	scrapes := float64(n)
	if ownTimer {
		scrapes = float64(elapsed) / float64(period)
	}
	return cpuRound{perScrape: time.Duration(float64(c1-c0) / scrapes), scrapes: scrapes}, nil
}

func median(rs []cpuRound) (med, lo, hi, mean time.Duration) {
	v := make([]time.Duration, len(rs))
	var cpu, n float64
	for i, r := range rs {
		v[i] = r.perScrape
		cpu += float64(r.perScrape) * r.scrapes
		n += r.scrapes
	}
	slices.Sort(v)
	med = v[len(v)/2]
	if len(v)%2 == 0 {
		med = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return med, v[0], v[len(v)-1], time.Duration(cpu / n)
}

func report(o options, ne, oc, ex *result, pushes []*pushRun) error {
	fmt.Println()
	printMachine()
	fmt.Printf("fixture: 8 mlx5 RoCE devices x 1 port (testfs.BenchRDMANode); scrape period %s; %d scrapes each in %d rounds\n\n",
		o.period, o.scrapes, o.rounds)

	neReads, ocReads := ne.io.perScrape(ne.io.reads), oc.io.perScrape(oc.io.reads)
	neMed, neLo, neHi, neMean := median(ne.rounds)
	ocMed, ocLo, ocHi, ocMean := median(oc.rounds)
	exMed, exLo, exHi, _ := median(ex.rounds)

	row := func(what string, a, b string, ratio float64) {
		r := ""
		if ratio > 0 {
			r = fmt.Sprintf("%.3f", ratio)
		}
		fmt.Printf("| %-52s | %18s | %18s | %6s |\n", what, a, b, r)
	}
	perScrape := func(r *result, n int) string { return f1(r.io.perScrape(n)) }
	ratio := func(f func(fileIO) int) float64 {
		if ne.io.perScrape(f(ne.io)) == 0 {
			return 0
		}
		return oc.io.perScrape(f(oc.io)) / ne.io.perScrape(f(ne.io))
	}
	fmt.Printf("| %-52s | %18s | %18s | %6s |\n", "per scrape", "node_exporter", "otelcol-iclens", "ratio")
	fmt.Printf("|%s|%s|%s|%s|\n", dashes(54), dashes(20), dashes(20), dashes(8))
	row("sysfs file reads (show() calls)", f1(neReads), f1(ocReads), ocReads/neReads)
	row("sysfs files opened", perScrape(ne, ne.io.files), perScrape(oc, oc.io.files), ratio(func(f fileIO) int { return f.files }))
	row("directories listed", perScrape(ne, ne.io.dirs), perScrape(oc, oc.io.dirs), ratio(func(f fileIO) int { return f.dirs }))
	row("failed opens", perScrape(ne, ne.io.failed), perScrape(oc, oc.io.failed), 0)
	row("CPU time, median of rounds", us(neMed), us(ocMed), float64(ocMed)/float64(neMed))
	row("CPU time, min..max of rounds", us(neLo)+".."+us(neHi), us(ocLo)+".."+us(ocHi), 0)
	row("CPU time, all scrapes", us(neMean), us(ocMean), float64(ocMean)/float64(neMean))
	row("  of which the Prometheus exporter alone, median", "", us(exMed), float64(exMed)/float64(neMed))
	row("  of which the Prometheus exporter alone, min..max", "", us(exLo)+".."+us(exHi), 0)
	var pushVerdicts []string
	for _, pr := range pushes {
		med, lo, hi, _ := median(pr.res.rounds)
		row("CPU time, push "+pr.res.name+" (per delivered scrape), median", "", us(med), float64(med)/float64(neMed))
		row("  push "+pr.res.name+", min..max of rounds", "", us(lo)+".."+us(hi), 0)
		r := float64(med) / float64(neMed)
		pushVerdicts = append(pushVerdicts, fmt.Sprintf("push %s <= 0.25: %s (%.2f, %d scrapes delivered)", pr.res.name, verdict(r <= 0.25), r, pr.res.delivered))
	}
	row("peak RSS (VmHWM), whole run", mib(ne.hwmKiB), mib(oc.hwmKiB), float64(oc.hwmKiB)/float64(ne.hwmKiB))
	row("samples in a /metrics answer", fmt.Sprint(ne.metricsLn), fmt.Sprint(oc.metricsLn), float64(oc.metricsLn)/float64(ne.metricsLn))
	fmt.Printf("\nscrapes traced: node_exporter %d, collector %d (%s window); ratio column: otelcol-iclens / node_exporter\n",
		ne.io.scrapes, oc.io.scrapes, o.straceWindow)
	fmt.Println("exporter alone: the same collector after its one scrape, its /metrics fetched at the same period: what the")
	fmt.Println("contrib Prometheus exporter costs to serve these series, whatever the receiver does")

	readsRatio, cpuRatio := ocReads/neReads, float64(ocMed)/float64(neMed)
	fmt.Printf("targets (issue 6): reads <= 1/3: %s (%.2f); CPU <= 1/3: %s (%.2f; the exporter alone: %.2f)\n",
		verdict(readsRatio <= 1.0/3), readsRatio, verdict(cpuRatio <= 1.0/3), cpuRatio, float64(exMed)/float64(neMed))
	for _, v := range pushVerdicts {
		fmt.Println("target (issue 15): " + v)
	}
	if readsRatio >= 1 || cpuRatio >= 1 {
		return errTargets{fmt.Sprintf("otelcol-iclens is not below node_exporter: reads ratio %.2f, CPU ratio %.2f", readsRatio, cpuRatio)}
	}
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func dashes(n int) string { return string(bytes.Repeat([]byte("-"), n)) }
func f1(v float64) string { return fmt.Sprintf("%.1f", v) }
func us(d time.Duration) string {
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}
func mib(kib int64) string { return fmt.Sprintf("%.1f MiB", float64(kib)/1024) }

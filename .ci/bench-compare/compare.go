package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"
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
//     both list <sys>/class/infiniband exactly once per scrape, which is the scrape counter.

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
	opens     opens
	rounds    []cpuRound
	hwmKiB    int64
	metricsLn int
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

	ocAddr, err := freePort()
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(tmp, "collector.yaml")
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, collectorCompareConfig, o.period, root, ocAddr, o.withoutScope), 0o644); err != nil {
		return err
	}
	oc, err := start("otelcol-iclens", tmp, "http://"+ocAddr+"/metrics", nil,
		append([]string{o.collector, "--config", cfgPath}, o.sets.args()...)...)
	if err != nil {
		return err
	}
	defer oc.stop()

	if err := ne.waitFor("node_infiniband_port_data_transmitted_bytes_total", 30*time.Second); err != nil {
		return err
	}
	if err := oc.waitFor(`component="rnic"`, 60*time.Second); err != nil {
		return err
	}
	neRes, ocRes := &result{name: "node_exporter"}, &result{name: "otelcol-iclens"}
	// Both must see the whole node: 8 devices with their byte counters.
	if err := sameNode(ne, `node_infiniband_port_data_transmitted_bytes_total\{device="(mlx5_\d)"`, neRes); err != nil {
		return err
	}
	if err := sameNode(oc, `interconnect_io[a-z_]*\{[^}]*component="rnic"[^}]*device="(mlx5_\d)/1"`, ocRes); err != nil {
		return err
	}

	// 1. Files per scrape.
	fmt.Printf("counting opens with strace: node_exporter %d scrapes, collector %s ...\n", o.straceN, o.straceWindow)
	if err := oc.pause(); err != nil {
		return err
	}
	neRes.opens, err = traceOpens(ne.pid(), sys, filepath.Join(tmp, "node_exporter.strace"), func() error {
		return fetchEvery(ne, o.period, o.straceN)
	})
	if err != nil {
		return err
	}
	if neRes.opens.scrapes != o.straceN {
		return fmt.Errorf("node_exporter listed the device class %d times in %d scrapes", neRes.opens.scrapes, o.straceN)
	}
	if err := oc.resume(); err != nil {
		return err
	}
	if err := ne.pause(); err != nil {
		return err
	}
	ocRes.opens, err = traceOpens(oc.pid(), sys, filepath.Join(tmp, "collector.strace"), func() error {
		return fetchEvery(oc, o.period, int(o.straceWindow/o.period))
	})
	if err != nil {
		return err
	}
	if ocRes.opens.scrapes == 0 {
		return fmt.Errorf("the collector did not scrape while traced (log: %s)", oc.log)
	}
	if err := ne.resume(); err != nil {
		return err
	}

	// 2. CPU time per scrape, alternating.
	per := o.scrapes / o.rounds
	fmt.Printf("CPU time: %d rounds x %d scrapes each, every %s, alternating ...\n", o.rounds, per, o.period)
	order := []*proc{ne, oc}
	results := map[*proc]*result{ne: neRes, oc: ocRes}
	for r := range o.rounds {
		if r%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for i, p := range order {
			other := order[1-i]
			round, err := measureCPU(p, other, o.period, per, p == oc)
			if err != nil {
				return err
			}
			results[p].rounds = append(results[p].rounds, round)
		}
		if r%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
	}
	for p, res := range results {
		if res.hwmKiB, err = p.status("VmHWM"); err != nil {
			return err
		}
	}
	return report(o, neRes, ocRes)
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
func measureCPU(p, other *proc, period time.Duration, n int, ownTimer bool) (cpuRound, error) {
	if err := other.pause(); err != nil {
		return cpuRound{}, err
	}
	defer other.resume()
	// Settle: a resumed ticker fires at once for the ticks it missed.
	time.Sleep(3 * period)
	c0, err := p.cpu()
	if err != nil {
		return cpuRound{}, err
	}
	t0 := time.Now()
	if err := fetchEvery(p, period, n); err != nil {
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

func report(o options, ne, oc *result) error {
	fmt.Println()
	printMachine()
	fmt.Printf("fixture: 8 mlx5 RoCE devices x 1 port (testfs.BenchRDMANode); scrape period %s; %d scrapes each in %d alternating rounds\n\n",
		o.period, o.scrapes, o.rounds)

	neFiles, ocFiles := ne.opens.perScrape(ne.opens.files), oc.opens.perScrape(oc.opens.files)
	neMed, neLo, neHi, neMean := median(ne.rounds)
	ocMed, ocLo, ocHi, ocMean := median(oc.rounds)

	row := func(what string, a, b string, ratio float64) {
		r := ""
		if ratio > 0 {
			r = fmt.Sprintf("%.3f", ratio)
		}
		fmt.Printf("| %-44s | %18s | %18s | %6s |\n", what, a, b, r)
	}
	fmt.Printf("| %-44s | %18s | %18s | %6s |\n", "per scrape", "node_exporter", "otelcol-iclens", "ratio")
	fmt.Printf("|%s|%s|%s|%s|\n", dashes(46), dashes(20), dashes(20), dashes(8))
	row("sysfs files opened and read", f1(neFiles), f1(ocFiles), ocFiles/neFiles)
	row("directories listed", f1(ne.opens.perScrape(ne.opens.dirs)), f1(oc.opens.perScrape(oc.opens.dirs)),
		oc.opens.perScrape(oc.opens.dirs)/ne.opens.perScrape(ne.opens.dirs))
	row("failed opens", f1(ne.opens.perScrape(ne.opens.failed)), f1(oc.opens.perScrape(oc.opens.failed)), 0)
	row("CPU time, median of rounds", us(neMed), us(ocMed), float64(ocMed)/float64(neMed))
	row("CPU time, min..max of rounds", us(neLo)+".."+us(neHi), us(ocLo)+".."+us(ocHi), 0)
	row("CPU time, all scrapes", us(neMean), us(ocMean), float64(ocMean)/float64(neMean))
	row("peak RSS (VmHWM), whole run", mib(ne.hwmKiB), mib(oc.hwmKiB), float64(oc.hwmKiB)/float64(ne.hwmKiB))
	row("samples in a /metrics answer", fmt.Sprint(ne.metricsLn), fmt.Sprint(oc.metricsLn), float64(oc.metricsLn)/float64(ne.metricsLn))
	fmt.Printf("\nscrapes traced: node_exporter %d, collector %d (%s window); ratio column: otelcol-iclens / node_exporter\n",
		ne.opens.scrapes, oc.opens.scrapes, o.straceWindow)

	filesRatio, cpuRatio := ocFiles/neFiles, float64(ocMed)/float64(neMed)
	fmt.Printf("targets (issue 6): files <= 1/3: %s (%.2f); CPU <= 1/3: %s (%.2f)\n",
		verdict(filesRatio <= 1.0/3), filesRatio, verdict(cpuRatio <= 1.0/3), cpuRatio)
	if filesRatio >= 1 || cpuRatio >= 1 {
		return errTargets{fmt.Sprintf("otelcol-iclens is not below node_exporter: files ratio %.2f, CPU ratio %.2f", filesRatio, cpuRatio)}
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

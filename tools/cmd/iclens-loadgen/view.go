package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// waitView waits until the gateway's view answers: the collector has started.
func waitView(view string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		resp, err := http.Get("http://" + view + "/api/nodes")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the view at %s did not answer within %s: %v", view, limit, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// verdictWatch polls the view's node list and keeps, per node, when it first showed
// tcp_fallback: the time a fault takes to be named where an operator looks.
type verdictWatch struct {
	view string
	fl   *fleet
	mu   sync.Mutex
	// named is when each node was first seen with tcp_fallback.
	named map[string]time.Time
	seen  int
}

func newVerdictWatch(view string, fl *fleet) *verdictWatch {
	return &verdictWatch{view: view, fl: fl, named: map[string]time.Time{}}
}

func (w *verdictWatch) run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		var nodes []struct {
			Name    string `json:"name"`
			Verdict string `json:"verdict"`
		}
		if resp, err := http.Get("http://" + w.view + "/api/nodes"); err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&nodes)
			resp.Body.Close()
		}
		now := time.Now()
		w.mu.Lock()
		w.seen = len(nodes)
		for _, n := range nodes {
			if _, ok := w.named[n.Name]; !ok && n.Verdict == "tcp_fallback" {
				w.named[n.Name] = now
			}
		}
		w.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// detected counts the faulty nodes named since their fault was sent.
func (w *verdictWatch) detected(faultSent map[int]time.Time) int {
	return len(w.latencies(faultSent))
}

// latencies are the seconds from each faulty node's first faulty sample to its verdict on the
// view, sorted.
func (w *verdictWatch) latencies(faultSent map[int]time.Time) []float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []float64
	for i, sent := range faultSent {
		if at, ok := w.named[w.fl.host(i)]; ok && at.After(sent) {
			out = append(out, at.Sub(sent).Seconds())
		}
	}
	sort.Float64s(out)
	return out
}

func (w *verdictWatch) nodesSeen() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}

// pageTimes are the view's load times: the cluster page's files and its API answer, and a node
// page's API answer (its first load: the node's whole window), each the median of 5 fetches.
type pageTimes struct {
	cluster, node           time.Duration
	clusterBytes, nodeBytes int
}

func (p pageTimes) String() string {
	return fmt.Sprintf("cluster page (html, js, css, /api/cluster) %s for %d KiB; node page /api/node %s for %d KiB",
		p.cluster.Round(100*time.Microsecond), p.clusterBytes/1024, p.node.Round(100*time.Microsecond), p.nodeBytes/1024)
}

func measurePages(view string, fl *fleet) pageTimes {
	base := "http://" + view
	fetch := func(paths ...string) (time.Duration, int) {
		var times []time.Duration
		var size int
		for range 5 {
			start := time.Now()
			size = 0
			for _, p := range paths {
				resp, err := http.Get(base + p)
				if err != nil {
					return 0, 0
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				size += int(n)
			}
			times = append(times, time.Since(start))
		}
		sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
		return times[len(times)/2], size
	}
	var p pageTimes
	p.cluster, p.clusterBytes = fetch("/cluster.html", "/cluster.js", "/cluster.css", "/app.css", "/api/cluster")
	node := fl.host(max(0, fl.faultEvery-1))
	p.node, p.nodeBytes = fetch("/api/node?name=" + url.QueryEscape(node))
	return p
}

// evictedField is the count the max_nodes warning carries (internal/nodestate.Evictions).
var evictedField = regexp.MustCompile(`"evicted": (\d+)`)

// evictionsSaid reads the gateway's log for the warnings that nodes were evicted past max_nodes.
func evictionsSaid(logPath string) string {
	f, err := os.Open(logPath)
	if err != nil {
		return "gateway log: " + err.Error()
	}
	defer f.Close()
	var lines, evicted int
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if !strings.Contains(l, "more nodes than max_nodes") {
			continue
		}
		if !strings.Contains(l, "\twarn\t") {
			return "eviction said at another level than Warn: " + l
		}
		lines++
		if m := evictedField.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			evicted += n
		}
	}
	return fmt.Sprintf("gateway log (%s): %d eviction warnings (Warn), %d nodes evicted in all", logPath, lines, evicted)
}

// waiting counts, on the view's cluster page, the nodes that wait on a peer (the connector's
// waits_on_peer), and the nodes that should: the healthy members of each job that holds a faulty
// node.
func waiting(view string, fl *fleet) (got, want int, err error) {
	resp, err := http.Get("http://" + view + "/api/cluster")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("/api/cluster answered %s", resp.Status)
	}
	var c struct {
		Groups []struct {
			Nodes []struct {
				WaitsOn []string `json:"waits_on"`
			} `json:"nodes"`
		} `json:"groups"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		return 0, 0, err
	}
	for _, g := range c.Groups {
		for _, n := range g.Nodes {
			if len(n.WaitsOn) > 0 {
				got++
			}
		}
	}
	return got, fl.waiters(), nil
}

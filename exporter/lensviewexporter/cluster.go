package lensviewexporter // import "github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter"

import (
	"sort"

	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// clusterJSON is /api/cluster: every node's verdict over the window, the rows of the cluster page
// (web/cluster.html), grouped by the job that owns the node's devices where the owner receiver
// says it. Times are unix milliseconds.
type clusterJSON struct {
	Now       int64 `json:"now"`
	WindowMs  int64 `json:"window_ms"`
	RefreshMs int64 `json:"refresh_ms"`
	// Grouped is false when no node sent interconnect.owner (no owner receiver in the nodes'
	// pipelines): every node is then in the one group "".
	Grouped bool           `json:"grouped"`
	Groups  []clusterGroup `json:"groups"`
}

// clusterGroup is the nodes of one job (or namespace); Name "" holds the nodes no job owns.
type clusterGroup struct {
	Name  string        `json:"name"`
	Nodes []clusterNode `json:"nodes"`
}

// clusterNode is one row: the node's verdict now and its history, one cell per run of a verdict
// (the node page's history strip).
type clusterNode struct {
	Name    string        `json:"name"`
	Verdict string        `json:"verdict,omitempty"`
	Cells   []verdictSpan `json:"cells"`
	// WaitsOn are the peers the node waits on now (the connector's waits_on_peer, device the
	// peer's node), so that the page shows which faulty node a healthy-looking row is slowed by.
	WaitsOn []string `json:"waits_on,omitempty"`
}

// clusterView is every node's row, groups by name with the ungrouped nodes last, nodes by name.
func (s *store) clusterView(refreshMs int64) clusterJSON {
	s.mu.RLock()
	defer s.mu.RUnlock()
	now := s.now()
	oldest := now.Add(-s.window).UnixMilli()
	out := clusterJSON{Now: now.UnixMilli(), WindowMs: s.window.Milliseconds(), RefreshMs: refreshMs, Groups: []clusterGroup{}}
	byGroup := map[string]*clusterGroup{}
	for _, n := range s.nodes {
		group, known := s.groupOf(n, now)
		out.Grouped = out.Grouped || known
		d := n.diag.export(s.verdictNames, oldest, nil)
		row := clusterNode{Name: n.name, Cells: d.History}
		for _, dv := range d.Devices {
			if dv.Verdict == verdict.WaitsOnPeer {
				row.WaitsOn = append(row.WaitsOn, dv.Device)
			}
		}
		if v, ok := n.diag.verdicts[diagKey{}]; ok {
			row.Verdict = v.verdict
		}
		g := byGroup[group]
		if g == nil {
			g = &clusterGroup{Name: group}
			byGroup[group] = g
		}
		g.Nodes = append(g.Nodes, row)
	}
	for _, g := range byGroup {
		sort.Slice(g.Nodes, func(i, j int) bool { return g.Nodes[i].Name < g.Nodes[j].Name })
		out.Groups = append(out.Groups, *g)
	}
	sort.Slice(out.Groups, func(i, j int) bool {
		a, b := out.Groups[i].Name, out.Groups[j].Name
		if (a == "") != (b == "") {
			return b == ""
		}
		return a < b
	})
	return out
}

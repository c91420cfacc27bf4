package dashboard

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

const (
	// NodeMetric and NodeLabel define the $node variable: every host_name that reports the
	// shared bandwidth metric (Grafana's label_values(NodeMetric, NodeLabel)). Every receiver
	// emits interconnect.io as soon as it finds a device, idle or not.
	NodeMetric = "interconnect_io_bytes_total"
	NodeLabel  = "host_name"

	// AllNodes is what $node stands for when "All" is selected: any non-empty host_name. A
	// custom all value keeps the regex short on large clusters, where Grafana would otherwise
	// join every host name into one alternation.
	AllNodes = ".+"
)

func variables() []cog.Builder[dashboard.VariableModel] {
	return []cog.Builder[dashboard.VariableModel]{
		dashboard.NewDatasourceVariableBuilder("datasource").
			Label("Prometheus").
			Type("prometheus"),
		dashboard.NewDatasourceVariableBuilder("traces").
			Label("Tempo").
			Type("tempo"),
		// Multi-select: the per-node view repeats once per selected node, side by side, as the
		// paper shows one chart per server.
		dashboard.NewQueryVariableBuilder("node").
			Label("Node").
			Description("host.name of the collector's resource (label host_name)").
			Datasource(promDS).
			Query(dashboard.StringOrMap{String: cog.ToPtr("label_values(" + NodeMetric + ", " + NodeLabel + ")")}).
			Definition("label_values(" + NodeMetric + ", " + NodeLabel + ")").
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Sort(dashboard.VariableSortAlphabeticalCaseInsensitiveAsc).
			Multi(true).
			IncludeAll(true).
			AllValue(AllNodes).
			Current(dashboard.VariableOption{
				Selected: cog.ToPtr(true),
				Text:     dashboard.StringOrArrayOfString{ArrayOfString: []string{"All"}},
				Value:    dashboard.StringOrArrayOfString{ArrayOfString: []string{"$__all"}},
			}),
	}
}

package dashboard

import (
	"strings"

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

	// OwnerMetric defines the $job and $pod variables: the jobs and pods that own a device of
	// the selected nodes now (the owner receiver's info series, value 1 while the ownership
	// holds). AllOwners is what they stand for when "All" is selected: any owner of that kind.
	OwnerMetric = "interconnect_owner"
	AllOwners   = ".+"
)

// multiSelect is a query variable of label values with several selectable and an "All" that
// stands for allValue.
func multiSelect(name, label, description, query, allValue string, sort dashboard.VariableSort) cog.Builder[dashboard.VariableModel] {
	return dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Description(description).
		Datasource(promDS).
		Query(dashboard.StringOrMap{String: cog.ToPtr(query)}).
		Definition(query).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(sort).
		Multi(true).
		IncludeAll(true).
		AllValue(allValue).
		Current(dashboard.VariableOption{
			Selected: cog.ToPtr(true),
			Text:     dashboard.StringOrArrayOfString{ArrayOfString: []string{"All"}},
			Value:    dashboard.StringOrArrayOfString{ArrayOfString: []string{"$__all"}},
		})
}

// ownerVariable is a multi-select of the owners of one kind (owner_kind) by label, on the selected
// nodes: the "Whose bytes" panels show the selected jobs or pods.
func ownerVariable(name, label, kind, description string) cog.Builder[dashboard.VariableModel] {
	q := "label_values(" + OwnerMetric + `{owner_kind="` + kind + `", ` + NodeLabel + `=~"$node"}, ` + label + ")"
	return multiSelect(name, strings.ToUpper(name[:1])+name[1:], description, q, AllOwners, dashboard.VariableSortNaturalAsc)
}

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
		multiSelect("node", "Node", "host.name of the collector's resource (label host_name)",
			"label_values("+NodeMetric+", "+NodeLabel+")", AllNodes, dashboard.VariableSortAlphabeticalCaseInsensitiveAsc),
		ownerVariable("job", "job_id", "job", "The batch jobs that own devices of the selected nodes (interconnect.owner job.id, from Slurm or the GPUs' processes)"),
		ownerVariable("pod", "k8s_pod_name", "pod", "The Kubernetes pods that own devices of the selected nodes (interconnect.owner k8s.pod.name, from the kubelet's pod-resources)"),
	}
}

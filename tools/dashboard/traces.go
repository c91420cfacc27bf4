package dashboard

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/tempo"
)

// TraceQL finds the spans of training jobs (instrumented with OpenTelemetry, exported through the
// same collector to Tempo) that ran on the selected nodes. The SDKs' resource detectors set
// host.name, the same attribute the receivers' metrics carry, which is what joins the two.
const TraceQL = `{ resource.host.name =~ "${node:regex}" }`

// traces puts the training job's steps next to the bandwidth they caused: the panel shares the
// dashboard's time range, and a span opened in Grafana links back to the node's interconnect
// bandwidth (the Tempo data source's traces-to-metrics link, provisioned in the example stack).
func (g *gen) traces() {
	g.row("Training jobs: traces from Tempo")
	q := tempo.NewDataqueryBuilder().
		Datasource(tempoDS).
		RefId("A").
		QueryType("traceql").
		Query(TraceQL).
		TableType(tempo.SearchTableTypeTraces).
		Limit(20)
	g.add(table.NewPanelBuilder().
		Id(g.id()).
		Title("Training job traces on $node").
		Description("Recent traces whose resource host.name is one of the selected nodes. Open a trace, then a span's 'Interconnect bandwidth' link for the node's bandwidth around that span.").
		Datasource(tempoDS).
		Targets([]cog.Builder[variants.Dataquery]{q}).
		Span(24).Height(9))
}

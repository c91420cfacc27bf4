package dashboard

import (
	"fmt"
	"slices"

	"github.com/grafana/grafana-foundation-sdk/go/bargauge"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// gen lays the dashboard out and records every PromQL expression as it goes, so that Queries()
// can never drift from what the JSON holds: both come from the same walk.
type gen struct {
	b       *dashboard.DashboardBuilder
	nextID  uint32
	queries []Query
}

// target is one PromQL query of a panel.
type target struct {
	expr    string
	legend  string
	instant bool   // one value per series at the end of the range (tables, bar gauges)
	needs   string // see Query.Needs
}

func (g *gen) id() uint32 {
	g.nextID++
	return g.nextID
}

// row starts a section. Rows stay expanded: a collapsed row hides its panels from anyone who
// opens the dashboard to find a fault, which is what this dashboard is for.
func (g *gen) row(title string) {
	g.b.WithRow(dashboard.NewRowBuilder(title).Id(g.id()))
}

// add places a panel after the previous one (the SDK wraps at 24 columns).
func (g *gen) add(p cog.Builder[dashboard.Panel]) { g.b.WithPanel(p) }

// targets turns a panel's queries into Prometheus data queries with ref IDs A, B, ... and records
// them under the panel's title.
func (g *gen) targets(panel string, ts []target) []cog.Builder[variants.Dataquery] {
	out := make([]cog.Builder[variants.Dataquery], 0, len(ts))
	for i, t := range ts {
		ref := string(rune('A' + i))
		g.queries = append(g.queries, Query{Panel: panel, RefID: ref, Expr: t.expr, Legend: t.legend, Instant: t.instant, Needs: t.needs})
		q := prometheus.NewDataqueryBuilder().
			Datasource(promDS).
			RefId(ref).
			Expr(t.expr).
			EditorMode(prometheus.QueryEditorModeCode)
		if t.legend != "" {
			q.LegendFormat(t.legend)
		} else {
			q.LegendFormat("__auto")
		}
		if t.instant {
			q.Instant().Format(prometheus.PromQueryFormatTable)
		} else {
			q.Range()
		}
		out = append(out, q)
	}
	return out
}

// timeSeries is a line chart over the dashboard's time range.
func (g *gen) timeSeries(title, desc, unit string, w, h uint32, ts ...target) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().
		Id(g.id()).
		Title(title).
		Description(desc).
		Datasource(promDS).
		Targets(g.targets(title, ts)).
		Unit(unit).
		Min(0).
		Span(w).Height(h).
		LineWidth(1).
		FillOpacity(10).
		ShowPoints(common.VisibilityModeNever).
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeTable).
			Placement(common.LegendPlacementBottom).
			ShowLegend(true).
			Calcs([]string{"mean", "max", "lastNotNull"})).
		Tooltip(common.NewVizTooltipOptionsBuilder().
			Mode(common.TooltipDisplayModeMulti).
			Sort(common.SortOrderDescending))
}

// stateTimeline shows small integer states (port state, readiness) as coloured bands over time,
// so that a flap or a change of state is visible where a table would show only the last value.
func (g *gen) stateTimeline(title, desc string, w, h uint32, maps []dashboard.ValueMapping, ts ...target) *statetimeline.PanelBuilder {
	return statetimeline.NewPanelBuilder().
		Id(g.id()).
		Title(title).
		Description(desc).
		Datasource(promDS).
		Targets(g.targets(title, ts)).
		Mappings(maps).
		ColorScheme(dashboard.NewFieldColorBuilder().Mode(dashboard.FieldColorModeIdThresholds)).
		Thresholds(neutralThresholds()).
		Span(w).Height(h).
		ShowValue(common.VisibilityModeAuto).
		MergeValues(true).
		FillOpacity(80)
}

// table shows instant queries, one row per series, labels as columns.
func (g *gen) table(title, desc string, w, h uint32, ts ...target) *table.PanelBuilder {
	for i := range ts {
		ts[i].instant = true
	}
	return table.NewPanelBuilder().
		Id(g.id()).
		Title(title).
		Description(desc).
		Datasource(promDS).
		Targets(g.targets(title, ts)).
		Span(w).Height(h).
		Filterable(true)
}

// hiddenColumns are labels every series carries that say nothing in a table.
var hiddenColumns = []string{
	"Time", "__name__", "job", "instance",
	"otel_scope_name", "otel_scope_version", "otel_scope_schema_url",
}

// organize hides the columns above (and hide: "Value" of an info metric, always 1) and renames
// value columns ("Value #A" after a merge).
func organize(renames map[string]string, hide ...string) dashboard.DataTransformerConfig {
	exclude := make(map[string]bool, len(hiddenColumns)+len(hide))
	for _, c := range slices.Concat(hiddenColumns, hide) {
		exclude[c] = true
	}
	opts := map[string]any{"excludeByName": exclude}
	if len(renames) > 0 {
		opts["renameByName"] = renames
	}
	return dashboard.DataTransformerConfig{Id: "organize", Options: opts}
}

// merge joins the instant results of several queries into one table, one row per label set.
func merge() dashboard.DataTransformerConfig {
	return dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}}
}

// barGauge compares one value per series at the end of the range (bandwidth per node now).
func (g *gen) barGauge(title, desc, unit string, w, h uint32, ts ...target) *bargauge.PanelBuilder {
	for i := range ts {
		ts[i].instant = true
	}
	return bargauge.NewPanelBuilder().
		Id(g.id()).
		Title(title).
		Description(desc).
		Datasource(promDS).
		Targets(g.targets(title, ts)).
		Unit(unit).
		Min(0).
		Span(w).Height(h).
		Orientation(common.VizOrientationHorizontal).
		DisplayMode(common.BarGaugeDisplayModeGradient).
		ShowUnfilled(true).
		ColorScheme(dashboard.NewFieldColorBuilder().Mode(dashboard.FieldColorModeIdPaletteClassic)).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}).Values(false))
}

// valueMap maps integer states to text and colour; keys are in order.
func valueMap(states ...state) []dashboard.ValueMapping {
	opts := make(map[string]dashboard.ValueMappingResult, len(states))
	for i, s := range states {
		idx := int32(i)
		opts[fmt.Sprint(s.value)] = dashboard.ValueMappingResult{Text: cog.ToPtr(s.text), Color: cog.ToPtr(s.color), Index: &idx}
	}
	return []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: opts}}}
}

type state struct {
	value int
	text  string
	color string
}

// neutralThresholds leaves colour to the value mappings.
func neutralThresholds() *dashboard.ThresholdsConfigBuilder {
	return dashboard.NewThresholdsConfigBuilder().
		Mode(dashboard.ThresholdsModeAbsolute).
		Steps([]dashboard.Threshold{{Value: nil, Color: "text"}})
}

// fixedColor is a field override property that pins a series' colour, so that a component keeps
// its colour across panels, nodes and cases.
func fixedColor(c string) dashboard.DynamicConfigValue {
	return dashboard.DynamicConfigValue{Id: "color", Value: map[string]any{"mode": "fixed", "fixedColor": c}}
}

// cellMapping colours a table column by a value mapping.
func cellMapping(m []dashboard.ValueMapping) []dashboard.DynamicConfigValue {
	return []dashboard.DynamicConfigValue{
		{Id: "mappings", Value: m},
		{Id: "custom.cellOptions", Value: map[string]any{"type": "color-background"}},
	}
}

func displayName(n string) dashboard.DynamicConfigValue {
	return dashboard.DynamicConfigValue{Id: "displayName", Value: n}
}

func unitOf(u string) dashboard.DynamicConfigValue {
	return dashboard.DynamicConfigValue{Id: "unit", Value: u}
}

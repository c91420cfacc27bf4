package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import (
	"fmt"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/internal/perf"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver/internal/metadata"
)

// loadPMU loads one PMU and resolves the events of src on it; the caller places the members
// per die. A PMU that cannot be used costs only itself.
func (d *discovery) loadPMU(name string, src source) (*perf.PMU, []*member) {
	p, err := perf.LoadPMU(d.r, filepath.Join(d.paths.pmus, name))
	if err != nil {
		d.problem(name, fmt.Errorf("PMU %s: %w", name, err))
		return nil, nil
	}
	if len(p.CPUs) == 0 {
		d.problem(name, fmt.Errorf("PMU %s: empty cpumask: no CPU to open its events on", name))
		return nil, nil
	}
	if src.product != 0 {
		if err := checkCSPMUProduct(d.r, p, src.product); err != nil {
			d.problem(name, err)
			return nil, nil
		}
	}
	var members []*member
	for _, def := range src.events {
		m, err := d.resolve(p, def, src.note)
		if err != nil {
			d.problem(name+"/"+def.alias+def.raw, err)
			continue
		}
		if m == nil {
			continue
		}
		m.direction, m.port = metadata.MapAttributeDirection[def.direction], def.port
		members = append(members, m)
		d.plan.scales = append(d.plan.scales, scaleFact{pmu: name, event: m.event, bpc: m.bpc, source: m.source})
	}
	if len(members) == 0 {
		return nil, nil
	}
	return p, members
}

// resolve turns an event definition into a counter on one PMU, applying the correctness guards:
// an alias whose encoding differs from the known-good one (ICX cas_count before v5.17) is
// replaced by the raw encoding; a scale that differs from the known bytes per count (ICX/SPR IIO
// free-running before the 2025 fix: 4 instead of 32 bytes) is corrected; a missing alias (SPR
// kernels before v6.4, GNR subchannel 1 before the 2026 fix) is replaced by the raw encoding.
// Every such decision is noted once. A nil member with no error means the event is absent and
// optional.
func (d *discovery) resolve(p *perf.PMU, def eventDef, why string) (*member, error) {
	if def.alias != "" && p.HasEvent(def.alias) {
		ev, err := p.Event(d.r, def.alias)
		if err != nil {
			return nil, fmt.Errorf("PMU %s event %s: %w", p.Name, def.alias, err)
		}
		m := &member{event: def.alias, attr: ev.Attr, source: metadata.AttributeScaleSourceSysfs}
		if def.terms != "" {
			// The alias with a filter (root_port=0x4): the alias's encoding plus the terms, in the
			// PMU's own format fields.
			m.event = withTerms(def.alias, def.terms)
			if m.attr, err = p.EncodeString(withTerms(ev.Desc, def.terms)); err != nil {
				return nil, fmt.Errorf("PMU %s event %s: %w", p.Name, m.event, err)
			}
		}
		if def.raw != "" {
			want, err := p.EncodeString(withTerms(def.raw, def.terms))
			if err != nil {
				return nil, fmt.Errorf("PMU %s event %s: %w", p.Name, def.alias, err)
			}
			if want != ev.Attr {
				d.note("encoding/"+pmuFamily(p.Name)+"/"+def.alias, "Kernel event alias has another encoding than this CPU counts; counting the raw encoding",
					zap.String("pmu", pmuFamily(p.Name)), zap.String("event", def.alias), zap.String("kernel_encoding", ev.Desc),
					zap.String("platform", d.plat.name), zap.String("raw", def.raw), zap.String("reason", why))
				m.attr = want
			}
		}
		bpc, ok := ev.BytesPerCount()
		switch {
		case def.bytesPerCount > 0 && !ev.HasUnit():
			// The kernel gives no size at all (arm_cspmu events have no .scale/.unit): the
			// table's, which names its source.
			m.bpc, m.source = def.bytesPerCount, metadata.AttributeScaleSourceBuiltin
		case def.bytesPerCount > 0 && (!ok || bpc != def.bytesPerCount):
			d.note("scale/"+pmuFamily(p.Name)+"/"+def.alias, "Kernel event scale differs from the bytes a count the hardware counts; correcting it "+
				"(kernel without the 2025 fix \"perf/x86/intel/uncore: Fix the scale of IIO free running counters\")",
				zap.String("pmu", pmuFamily(p.Name)), zap.String("event", def.alias), zap.Float64("scale", ev.Scale), zap.String("unit", ev.Unit),
				zap.Float64("kernel_bytes_per_count", bpc), zap.Float64("bytes_per_count", def.bytesPerCount), zap.String("platform", d.plat.name))
			m.bpc, m.source = def.bytesPerCount, metadata.AttributeScaleSourceCorrected
		case ok:
			m.bpc = bpc
		default:
			return nil, fmt.Errorf("PMU %s event %s: unit %q is not a byte unit and no bytes_per_count is configured", p.Name, def.alias, ev.Unit)
		}
		return m, nil
	}
	if def.raw == "" || def.bytesPerCount <= 0 {
		if def.port >= 0 {
			// A port this CPU does not have (a generic table lists 8, some parts have 4).
			return nil, nil
		}
		return nil, fmt.Errorf("PMU %s has no event %s", p.Name, def.alias)
	}
	attr, err := p.EncodeString(withTerms(def.raw, def.terms))
	if err != nil {
		return nil, fmt.Errorf("PMU %s event %s: %w", p.Name, def.raw, err)
	}
	name := def.raw
	if def.name != "" {
		name = def.name
	}
	if def.alias != "" {
		name = withTerms(def.alias, def.terms)
		d.note("alias/"+pmuFamily(p.Name)+"/"+def.alias, "Kernel has no alias for the event; counting its raw encoding",
			zap.String("pmu", pmuFamily(p.Name)), zap.String("event", def.alias), zap.String("raw", def.raw), zap.String("reason", why))
	}
	return &member{event: name, attr: attr, bpc: def.bytesPerCount, source: metadata.AttributeScaleSourceBuiltin}, nil
}

// withTerms appends format terms to an event description.
func withTerms(desc, terms string) string {
	if terms == "" {
		return desc
	}
	return desc + "," + terms
}

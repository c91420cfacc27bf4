package nodestate // import "github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"

import (
	"sort"

	"github.com/otelcol-iclens/otelcol-iclens/internal/natorder"
)

// The gpu receiver's opt-in per-link NVLink metrics (receiver/gpureceiver/metadata.yaml): bytes
// through one link by direction, and its data-link errors (CRC, replay, recovery) by kind, each
// with the link's index in AttrLink.
const (
	MetricNVLinkLinkIO     = "gpu.nvlink.link.io"
	MetricNVLinkLinkErrors = "gpu.nvlink.link.errors"
	AttrLink               = "link"
)

// NVLink is one NVLink link of a GPU as the per-link metrics report it: the bytes per second it
// carries in both directions together, and its data-link errors per second, every kind together.
// A GPU reports its links only where gpu.nvlink.link.io (and .errors) are enabled.
type NVLink struct {
	Link   string  // the link's index, as NVML numbers them
	Rate   float64 // bytes/s, transmit + receive
	Errors float64 // errors/s; 0 where the errors are not reported
}

// nvlinks collects the per-link rates of one At, by GPU (the gpu receiver's device) and link.
type nvlinks map[string]map[string]*NVLink

func (l nvlinks) add(gpu, link string, rate, errors float64) {
	links := l[gpu]
	if links == nil {
		links = map[string]*NVLink{}
		l[gpu] = links
	}
	nl := links[link]
	if nl == nil {
		nl = &NVLink{Link: link}
		links[link] = nl
	}
	nl.Rate += rate
	nl.Errors += errors
}

// of returns the GPU's links in link order.
func (l nvlinks) of(gpu string) []NVLink {
	out := make([]NVLink, 0, len(l[gpu]))
	for _, nl := range l[gpu] {
		out = append(out, *nl)
	}
	sort.Slice(out, func(i, j int) bool { return natorder.Compare(out[i].Link, out[j].Link) < 0 })
	return out
}

// IdleNVLinks returns the GPU's links that carry less than idleShare of its busiest link's bytes
// while that link carries at least busy bytes/s: NCCL spreads a GPU's NVLink traffic over all its
// links (over every NVSwitch of an HGX board, over every bridge link of a pair), so one link
// left out while its peers are busy is a link that is down or trained out, not a quiet one.
func (g GPU) IdleNVLinks(idleShare, busy float64) []NVLink {
	var top float64
	for _, l := range g.NVLinks {
		top = max(top, l.Rate)
	}
	if top < busy {
		return nil
	}
	var out []NVLink
	for _, l := range g.NVLinks {
		if l.Rate < idleShare*top {
			out = append(out, l)
		}
	}
	return out
}

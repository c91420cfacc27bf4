package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
)

// A read of a sysfs attribute can block for as long as the driver does: an mlx5 counter read is a
// firmware command (drivers/net/ethernet/mellanox/mlx5/core/cmd.c waits up to its command timeout,
// 60 s and more when the firmware is wedged), and a read cannot be interrupted from user space. So
// the files of each device are read on a goroutine of their own while the scrape waits for them
// until the device's deadline (read_timeout, and never past the scrape context's deadline). A
// device whose reads do not return by then is skipped, with its series, until they do (a failure
// of every scrape in between); the other devices are read as usual, and neither the scrape nor the shutdown waits for
// the stuck read (the goroutine is left to finish, and its descriptors are closed once it has).
//
// Parsing stays on the reading goroutine (it is pure), while everything with state (the series
// tracker, the metrics builder, the error tracker) stays on the scrape's goroutine: the reading
// goroutine writes only the readings of its own ports and netdevs, which the scrape looks at
// after the goroutine is done.

// readGroup is what one device costs a scrape: its ports, or one netdev, read with a Reader of its
// own (its own buffer and kept descriptors).
type readGroup struct {
	name    string
	ports   []*port
	netdevs []*netdev
	reader  *sysfs.Reader
	// points is what the group's readings feed (pointsOf).
	points int
}

// stuckRead is a group whose reads did not return in time: the goroutine still blocked in them,
// and the Reader it holds.
type stuckRead struct {
	since  time.Time
	done   chan struct{}
	reader *sysfs.Reader
}

// groupsOf groups the ports by device (in their order) and puts each netdev in a group of its own.
func (s *rnicScraper) groupsOf(pl *plan) []*readGroup {
	var out []*readGroup
	byDevice := map[string]*readGroup{}
	for _, p := range pl.ports {
		g := byDevice[p.device]
		if g == nil {
			g = &readGroup{name: p.device, reader: s.reader.Fork()}
			byDevice[p.device] = g
			out = append(out, g)
		}
		g.ports = append(g.ports, p)
	}
	for _, nd := range pl.netdevs {
		out = append(out, &readGroup{name: "net/" + nd.name, netdevs: []*netdev{nd}, reader: s.reader.Fork()})
	}
	for _, g := range out {
		g.points = pointsOf(g.ports, g.netdevs)
	}
	return out
}

// closeGroups closes the kept descriptors of groups that are not stuck (a stuck group's Reader
// was moved to s.stuck and replaced).
func closeGroups(groups []*readGroup) {
	for _, g := range groups {
		g.reader.CloseKept()
	}
}

// keptFiles counts the descriptors the groups keep open.
func (s *rnicScraper) keptFiles() int {
	n := 0
	for _, g := range s.groups {
		n += g.reader.Kept()
	}
	return n
}

// deviceDeadline returns the device's deadline: read_timeout from now, never past the scrape's.
// Deadlines are waited for on the wall clock (the scrape context's deadline is one), not on the
// scrape's injected clock.
func (s *rnicScraper) deviceDeadline(ctx context.Context) time.Time {
	d := time.Now().Add(s.cfg.ReadTimeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		return cd
	}
	return d
}

// pointsOf is what the readings of ports and netdevs feed: what a scrape that cannot read them
// loses. It is counted when the group is made, before any goroutine writes its readings.
func pointsOf(ports []*port, netdevs []*netdev) int {
	n := 0
	for _, p := range ports {
		for i := range p.gauges {
			n += p.gauges[i].def.points
		}
		for i := range p.counters {
			n += p.counters[i].points()
		}
	}
	for _, nd := range netdevs {
		n += 2 + len(nd.ethtool)
	}
	return n
}

// readGroupFiles runs the group's reads with its deadline. It reports whether the readings are
// there to be recorded; false when the group is stuck (now, or still from an earlier scrape), which
// is a failure of this scrape.
func (s *rnicScraper) readGroupFiles(ctx context.Context, g *readGroup, run *scrapeRun) bool {
	key := "stuck:" + g.name
	if st := s.stuck[g.name]; st != nil {
		select {
		case <-st.done:
			st.reader.CloseKept()
			delete(s.stuck, g.name)
			s.log.Recover(key, "reads of the device returned; reading it again", zap.String("device", g.name),
				zap.Duration("stuck_for", run.at.Sub(st.since)))
		default:
			s.fail(run, key, g.points, fmt.Errorf("%s: reads blocked since %s; the device is skipped until they return",
				g.name, st.since.UTC().Format(time.RFC3339)))
			return false
		}
	}
	deadline := s.deviceDeadline(ctx)
	if !time.Now().Before(deadline) {
		s.fail(run, "deadline:"+g.name, g.points, fmt.Errorf("%s: not read, the scrape's deadline had passed", g.name))
		return false
	}
	given := time.Until(deadline)
	done := make(chan struct{})
	r, slow := g.reader, run.slow
	go func() {
		defer close(done)
		s.readGroup(r, g, slow)
	}()
	if s.timer == nil {
		s.timer = time.NewTimer(given)
	} else {
		s.timer.Reset(given)
	}
	select {
	case <-done:
		s.timer.Stop()
		return true
	case <-s.timer.C:
	}
	s.stuck[g.name] = &stuckRead{since: run.at, done: done, reader: r}
	g.reader = s.reader.Fork()
	s.fail(run, key, g.points, fmt.Errorf("%s: reads did not return within %s (read_timeout or the scrape's deadline); "+
		"the device is skipped until they do", g.name, given.Round(time.Millisecond)))
	return false
}

// readGroup reads every file of the group into its ports' and netdevs' readings. It runs on a
// goroutine of its own and touches nothing but r and the group's readings.
func (s *rnicScraper) readGroup(r *sysfs.Reader, g *readGroup, slow bool) {
	for _, p := range g.ports {
		s.readPort(r, p, slow)
	}
	for _, nd := range g.netdevs {
		if s.cfg.Metrics.InterconnectIo.Enabled {
			nd.tx.raw, nd.tx.err = r.ReadUintKept(nd.txBytes)
			nd.rx.raw, nd.rx.err = r.ReadUintKept(nd.rxBytes)
		}
	}
}

// discoverDeviceWithin discovers dev on a goroutine of its own with the device's deadline, as its
// counters are read (readGroupFiles): discovery reads attribute files too (link_layer, the PCI
// function's numa_node, hca_type, fw_ver, gid_attrs/ndevs), each a show() that a wedged driver
// can hold like a counter's. The listing of the devices and their ports stays on the scrape's
// goroutine: kernfs answers directory reads from its own nodes without calling the driver
// (fs/kernfs/dir.c kernfs_fop_readdir). A device whose
// discovery does not return in time is left out of the plan (a failure of every scrape until then); the scrape after
// its reads return discovers again (checkStuckDiscoveries). Its goroutine has a Reader of its own.
func (s *rnicScraper) discoverDeviceWithin(ctx context.Context, dev string, run *scrapeRun) ([]*port, error) {
	if s.discStuck[dev] != nil {
		return nil, nil // reported on every scrape while it is stuck (checkStuckDiscoveries)
	}
	deadline := s.deviceDeadline(ctx)
	if !time.Now().Before(deadline) {
		return nil, fmt.Errorf("%s: not discovered, the scrape's deadline had passed", dev)
	}
	given := time.Until(deadline)
	d, r := s.disc, s.reader.Fork()
	d.reader = r
	var (
		ports []*port
		err   error
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer r.CloseKept()
		ports, err = d.discoverDevice(dev)
	}()
	timer := time.NewTimer(given)
	defer timer.Stop()
	select {
	case <-done:
		return ports, err
	case <-timer.C:
	}
	s.discStuck[dev] = done
	s.fail(run, "discovery-stuck:"+dev, 0, fmt.Errorf("%s: discovery reads did not return within %s (read_timeout or the scrape's deadline); "+
		"the device is left out until they do", dev, given.Round(time.Millisecond)))
	return nil, nil
}

// checkStuckDiscoveries asks for a discovery when the reads of a device left out as stuck have
// returned, so that it is read again; while they have not, the device's absence is a failure of
// every scrape.
func (s *rnicScraper) checkStuckDiscoveries(run *scrapeRun) {
	for _, dev := range slices.Sorted(maps.Keys(s.discStuck)) {
		select {
		case <-s.discStuck[dev]:
			delete(s.discStuck, dev)
			s.rediscovery.Request()
			s.log.Recover("discovery-stuck:"+dev, "discovery reads of the device returned; discovering it again", zap.String("device", dev))
		default:
			s.fail(run, "discovery-stuck:"+dev, 0, fmt.Errorf("%s: discovery reads still blocked; the device is left out until they return", dev))
		}
	}
}

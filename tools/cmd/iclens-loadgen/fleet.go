package main

import (
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
)

// fleet is the simulated nodes: each plays the simulator's healthy GPUDirect AllReduce (package
// internal/scenario, the model the demo and the end-to-end tests replay), and every faultEvery-th
// node falls back to TCP at sample faultAt, as one node of a ring does. Nodes belong to jobs of
// jobSize nodes (the owner receiver's interconnect.owner, so that the view groups them).
type fleet struct {
	nodes      int
	faultEvery int
	jobSize    int
	// healthy and faulty are node1's samples of the two cases, shared by every node: what differs
	// between nodes is their host.name, and the view and the connector key everything by it.
	healthy, faulty [][]scenario.Point
}

func newFleet(nodes, faultEvery, jobSize, samples, faultAt int, interval time.Duration) (*fleet, error) {
	healthy, ok := scenario.Named("healthy_allreduce")
	if !ok {
		return nil, fmt.Errorf("no simulated case healthy_allreduce")
	}
	tcp, ok := scenario.Named("tcp_fallback")
	if !ok {
		return nil, fmt.Errorf("no simulated case tcp_fallback")
	}
	fault := scenario.Case{Name: "loadgen_tcp_fallback", Phases: []scenario.Phase{
		{From: 0, Nodes: healthy.Phases[0].Nodes, Expect: healthy.Phases[0].Expect},
		{From: faultAt, Nodes: tcp.Phases[0].Nodes, Expect: tcp.Phases[0].Expect},
	}}
	s := interval.Seconds()
	return &fleet{nodes: nodes, faultEvery: faultEvery, jobSize: jobSize,
		healthy: healthy.Stream(0, samples, s), faulty: fault.Stream(0, samples, s)}, nil
}

func (f *fleet) host(i int) string { return fmt.Sprintf("node%04d", i) }

// faulty reports whether node i falls back to TCP.
func (f *fleet) isFaulty(i int) bool { return f.faultEvery > 0 && i%f.faultEvery == f.faultEvery-1 }

// metrics is node i's scrape k, stamped at.
func (f *fleet) metrics(i, k int, at time.Time) pmetric.Metrics {
	pts := f.healthy[k]
	if f.isFaulty(i) {
		pts = f.faulty[k]
	}
	if f.jobSize > 0 {
		pts = append(pts[:len(pts):len(pts)], scenario.JobOwnerPoints(fmt.Sprint(1000+i/f.jobSize))...)
	}
	return scenario.Metrics(f.host(i), "", pts, at)
}

// waiters is how many nodes wait on a faulty peer once the faults hold: the healthy members of
// every job that holds a faulty node.
func (f *fleet) waiters() int {
	if f.jobSize <= 0 {
		return 0
	}
	faulty := map[int]bool{}
	for i := range f.nodes {
		if f.isFaulty(i) {
			faulty[i/f.jobSize] = true
		}
	}
	n := 0
	for i := range f.nodes {
		if faulty[i/f.jobSize] && !f.isFaulty(i) {
			n++
		}
	}
	return n
}

// Package rnicreceiver reads the counters of every RDMA NIC port from /sys/class/infiniband (and
// the port's network device) and emits them as OpenTelemetry metrics: interconnect.io with
// component=rnic and component=netdev, and the receiver's own rnic.* metrics.
//
//go:generate mdatagen metadata.yaml
package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

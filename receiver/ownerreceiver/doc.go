// Package ownerreceiver publishes whose bytes move through each interconnect component of the
// node: an interconnect.owner info series per owned component instance, resolved by
// internal/owner from the sources turned on in its configuration.
//
//go:generate mdatagen metadata.yaml
package ownerreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/ownerreceiver"

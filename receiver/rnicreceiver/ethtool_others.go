//go:build !linux

package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import "errors"

// newIoctlEthtool: the SIOCETHTOOL ioctl is Linux's.
func newIoctlEthtool() (ethtoolStats, error) { return nil, errors.ErrUnsupported }

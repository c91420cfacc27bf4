package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"bytes"
	"errors"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver/internal/metadata"
)

// portGauge is an attribute file of a port read as a gauge on every scrape: what feeds it, how it
// parses and what it records.
type portGauge struct {
	file    string
	enabled func(metadata.MetricsConfig) bool
	// points is how many points the file feeds (what a failed read costs).
	points int
	// parse returns the file's value and, for rate, the lane count; linkLayer is the port's
	// link_layer ("InfiniBand", "Ethernet", or empty where the file is missing).
	parse  func(path, linkLayer string, b []byte) (v, extra int64, err error)
	record func(mb *metadata.MetricsBuilder, now pcommon.Timestamp, port string, v, extra int64)
}

// portGauges are the gauges of every port: state and phys_state print "%d: %s" and rate
// "<Gb/s> Gb/sec (<lanes>X <speed>)" (core sysfs.c state_show, phys_state_show, rate_show).
var portGauges = []portGauge{
	{
		file: "state", points: 1, parse: parseState,
		enabled: func(m metadata.MetricsConfig) bool { return m.RnicPortState.Enabled },
		record: func(mb *metadata.MetricsBuilder, now pcommon.Timestamp, port string, v, _ int64) {
			mb.RecordRnicPortStateDataPoint(now, v, port)
		},
	},
	{
		file: "phys_state", points: 1, parse: parseState,
		enabled: func(m metadata.MetricsConfig) bool { return m.RnicPortPhysicalState.Enabled },
		record: func(mb *metadata.MetricsBuilder, now pcommon.Timestamp, port string, v, _ int64) {
			mb.RecordRnicPortPhysicalStateDataPoint(now, v, port)
		},
	},
	{
		file: "rate", points: 2, parse: parseRate,
		enabled: func(m metadata.MetricsConfig) bool { return m.RnicPortRate.Enabled || m.RnicPortWidth.Enabled },
		record: func(mb *metadata.MetricsBuilder, now pcommon.Timestamp, port string, v, lanes int64) {
			mb.RecordRnicPortRateDataPoint(now, v, port)
			if lanes > 0 {
				mb.RecordRnicPortWidthDataPoint(now, lanes, port)
			}
		},
	},
}

// parseState fits portGauge.parse.
func parseState(path, _ string, b []byte) (int64, int64, error) {
	v, err := parseStateID(path, b)
	return v, 0, err
}

// parseStateID parses a state or phys_state file: "4: ACTIVE", "5: LinkUp".
func parseStateID(path string, b []byte) (int64, error) {
	id, _, ok := bytes.Cut(b, []byte(":"))
	if !ok {
		return 0, &sysfs.ValueError{Path: path, Value: string(b), Err: errors.New(`want "<id>: <name>"`)}
	}
	v, err := strconv.ParseInt(string(bytes.TrimSpace(id)), 10, 64)
	if err != nil {
		return 0, &sysfs.ValueError{Path: path, Value: string(b), Err: err}
	}
	return v, nil
}

// parseRate parses the rate file: "<Gb/s> Gb/sec (<lanes>X <speed>)", e.g. "100 Gb/sec (4X EDR)",
// "2.5 Gb/sec (1X SDR)", "25 Gb/sec (1X EDR)" (core sysfs.c rate_show). Gb is 10^9 bits. An
// unpopulated port may print "0 GB/sec" or omit the lane part; both parse, with lanes 0.
//
// rate_show prints the signalling rate of the port's IB speed and width. On an InfiniBand link
// SDR, DDR and QDR are 8b/10b coded, so the data rate is 80 % of it; kernels before the SDR case
// was named print nothing for SDR ("10 Gb/sec (4X)", node_exporter's i40iw0 fixture), and the
// missing name is SDR too. On an Ethernet link layer the speed and width are
// ib_get_eth_speed()'s mapping of the netdev's speed (drivers/infiniband/core/verbs.c: 20 GbE is
// "4X DDR", 10 GbE "1X FDR10"), not a coded IB link: the rate is the netdev's and is taken as it is.
func parseRate(path, linkLayer string, b []byte) (bytesPerSecond, lanes int64, err error) {
	fields := bytes.Fields(b)
	if len(fields) < 2 {
		return 0, 0, &sysfs.ValueError{Path: path, Value: string(b), Err: errors.New(`want "<n> Gb/sec (<lanes>X <speed>)"`)}
	}
	gbps, perr := strconv.ParseFloat(string(fields[0]), 64)
	// The fastest link there is runs at 1.6 Tb/s; anything not in [0, 1e5] Gb/s (NaN included) is garbage.
	if perr != nil || !(gbps >= 0 && gbps <= 1e5) {
		return 0, 0, &sysfs.ValueError{Path: path, Value: string(b), Err: errors.New("bad rate")}
	}
	if !strings.EqualFold(linkLayer, "Ethernet") && len(fields) >= 3 {
		speed := "SDR" // "(4X)": the lane count alone
		if len(fields) >= 4 {
			speed = string(bytes.TrimSuffix(fields[3], []byte(")")))
		}
		if eightBTenB[speed] {
			// FDR10 and later use 64b/66b or better, about the data rate.
			gbps *= 0.8
		}
	}
	bytesPerSecond = int64(gbps * 1e9 / 8)
	if len(fields) >= 3 {
		l := bytes.TrimPrefix(fields[2], []byte("("))
		if x := bytes.IndexByte(l, 'X'); x > 0 {
			if n, err := strconv.ParseInt(string(l[:x]), 10, 64); err == nil && n > 0 {
				lanes = n
			}
		}
	}
	return bytesPerSecond, lanes, nil
}

// eightBTenB are the InfiniBand speeds with 8b/10b line coding (IBA vol 2, 5.2.2; core sysfs.c
// rate_show prints 25/50/100 deci-Gb/s per lane for them).
var eightBTenB = map[string]bool{"SDR": true, "DDR": true, "QDR": true}

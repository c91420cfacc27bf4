package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/counter"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver/internal/metadata"
)

// What the kernel exposes per RDMA port, and which metric each file feeds.
//
// Sources:
//   - counters/: the IBA PortCounters / PortCountersExtended attributes created by
//     drivers/infiniband/core/sysfs.c (PORT_PMA_ATTR(name, counter, width, offset); widths below are
//     the `width` argument). The extended table (pma_group_ext) is used when the port's ClassPortInfo
//     has IB_PMA_CLASS_CAP_EXT_WIDTH; it alone has unicast_/multicast_ packet counters, and in it the
//     data and packet counters are 64 bits wide. In the basic table they are 32 bits wide.
//   - counters_ext/: the older 64-bit layout (port_xmit_data_64, ...), mlx4.
//   - hw_counters/: driver counters (rdma_hw_stats). mlx5 names from drivers/infiniband/hw/mlx5/counters.c,
//     rxe names from drivers/infiniband/sw/rxe/rxe_hw_counters.c, bnxt_re / efa byte counters as in
//     prometheus/procfs PR #675 and DataDog's infiniband check.
//
// InfiniBand PortCounters saturate ("instead of overflowing, they shall stop at all ones",
// IBA 1.8 §16.1.3.5). Driver hw_counters are printed as u64; mlx5 Q counters are 32-bit firmware
// counters whose behaviour at 2^32 is not documented, so they are treated as monotonic: a decrease
// starts a new series instead of producing a negative or wrapped delta.

// metricKind names the metric a counter file feeds.
type metricKind uint8

const (
	kindNone metricKind = iota // read only for rnic.driver.counter
	kindBytes
	kindPackets
	kindPortError
	kindXmitWait
	kindCNP
	kindECN
	kindTransportEvent
	kindTransportError
	kindOperationBytes
)

// octetsPerDataUnit is the unit of port_xmit_data / port_rcv_data: "octets, divided by 4"
// (Documentation/ABI/stable/sysfs-class-infiniband; mlx5 mad.c shifts the vport octets right by 2).
// It is fixed by the IBA spec, not a lane count.
const octetsPerDataUnit = 4

type counterDef struct {
	kind      metricKind
	direction metadata.AttributeDirection
	operation metadata.AttributeOperation // kindOperationBytes
	width     uint8                       // 0: depends on the counter table (data and packet counters)
}

var pmaCounters = map[string]counterDef{
	"port_xmit_data":                  {kind: kindBytes, direction: metadata.AttributeDirectionTransmit},
	"port_rcv_data":                   {kind: kindBytes, direction: metadata.AttributeDirectionReceive},
	"port_xmit_packets":               {kind: kindPackets, direction: metadata.AttributeDirectionTransmit},
	"port_rcv_packets":                {kind: kindPackets, direction: metadata.AttributeDirectionReceive},
	"port_xmit_wait":                  {kind: kindXmitWait, width: 32},
	"symbol_error":                    {kind: kindPortError, width: 16},
	"link_error_recovery":             {kind: kindPortError, width: 8},
	"link_downed":                     {kind: kindPortError, width: 8},
	"port_rcv_errors":                 {kind: kindPortError, width: 16},
	"port_rcv_remote_physical_errors": {kind: kindPortError, width: 16},
	"port_rcv_switch_relay_errors":    {kind: kindPortError, width: 16},
	"port_xmit_discards":              {kind: kindPortError, width: 16},
	"port_xmit_constraint_errors":     {kind: kindPortError, width: 8},
	"port_rcv_constraint_errors":      {kind: kindPortError, width: 8},
	"local_link_integrity_errors":     {kind: kindPortError, width: 4},
	"excessive_buffer_overrun_errors": {kind: kindPortError, width: 4},
	"VL15_dropped":                    {kind: kindPortError, width: 16},
}

// legacyExtCounters are the counters_ext/ files (64-bit, never saturating in practice).
var legacyExtCounters = map[string]counterDef{
	"port_xmit_data_64":    {kind: kindBytes, direction: metadata.AttributeDirectionTransmit},
	"port_rcv_data_64":     {kind: kindBytes, direction: metadata.AttributeDirectionReceive},
	"port_xmit_packets_64": {kind: kindPackets, direction: metadata.AttributeDirectionTransmit},
	"port_rcv_packets_64":  {kind: kindPackets, direction: metadata.AttributeDirectionReceive},
}

var hwCounters = map[string]counterDef{
	// RoCE congestion control (mlx5 cong counters, 64-bit).
	"np_cnp_sent":                {kind: kindCNP},
	"rp_cnp_handled":             {kind: kindCNP},
	"rp_cnp_ignored":             {kind: kindCNP},
	"np_ecn_marked_roce_packets": {kind: kindECN},

	// Loss and retransmission (mlx5 retransmission / roce_accl Q counters).
	"out_of_sequence":                {kind: kindTransportEvent},
	"packet_seq_err":                 {kind: kindTransportEvent},
	"local_ack_timeout_err":          {kind: kindTransportEvent},
	"rnr_nak_retry_err":              {kind: kindTransportEvent},
	"implied_nak_seq_err":            {kind: kindTransportEvent},
	"duplicate_request":              {kind: kindTransportEvent},
	"roce_adp_retrans":               {kind: kindTransportEvent},
	"roce_adp_retrans_to":            {kind: kindTransportEvent},
	"roce_slow_restart":              {kind: kindTransportEvent},
	"roce_slow_restart_cnps":         {kind: kindTransportEvent},
	"roce_slow_restart_trans":        {kind: kindTransportEvent},
	"req_transport_retries_exceeded": {kind: kindTransportEvent},
	"req_rnr_retries_exceeded":       {kind: kindTransportEvent},
	// rxe (Soft-RoCE) equivalents.
	"out_of_seq_request":     {kind: kindTransportEvent},
	"rcvd_seq_err":           {kind: kindTransportEvent},
	"rcvd_rnr_err":           {kind: kindTransportEvent},
	"send_rnr_err":           {kind: kindTransportEvent},
	"retry_exceeded_err":     {kind: kindTransportEvent},
	"retry_rnr_exceeded_err": {kind: kindTransportEvent},
	"completer_retry_err":    {kind: kindTransportEvent},

	// Errors and drops.
	"out_of_buffer":              {kind: kindTransportError},
	"rx_icrc_encapsulated":       {kind: kindTransportError},
	"req_cqe_error":              {kind: kindTransportError},
	"resp_cqe_error":             {kind: kindTransportError},
	"req_cqe_flush_error":        {kind: kindTransportError},
	"resp_cqe_flush_error":       {kind: kindTransportError},
	"req_remote_access_errors":   {kind: kindTransportError},
	"resp_remote_access_errors":  {kind: kindTransportError},
	"req_remote_invalid_request": {kind: kindTransportError},
	"resp_local_length_error":    {kind: kindTransportError},
	"send_err":                   {kind: kindTransportError},

	// Broadcom bnxt_re (drivers/infiniband/hw/bnxt_re/hw_counters.c, bnxt_re_stat_descs). Newer
	// kernels rename some of them to the mlx5 names above (np_cnp_pkts, rp_cnp_handled,
	// np_ecn_marked_roce_packets, out_of_buffer).
	"tx_cnp_pkts":        {kind: kindCNP},
	"rx_cnp_pkts":        {kind: kindCNP},
	"np_cnp_pkts":        {kind: kindCNP},
	"rx_ecn_marked_pkts": {kind: kindECN},
	"to_retransmits":     {kind: kindTransportEvent},
	"seq_err_naks_rcvd":  {kind: kindTransportEvent},
	"rnr_naks_rcvd":      {kind: kindTransportEvent},
	"max_retry_exceeded": {kind: kindTransportEvent},
	"dup_req":            {kind: kindTransportEvent},
	"oos_drop_count":     {kind: kindTransportEvent},
	"rx_out_of_buffer":   {kind: kindTransportError},
	"missing_resp":       {kind: kindTransportError},

	// Intel irdma (drivers/infiniband/hw/irdma/verbs.c): E810 is IRDMA_GEN_2, the IPU (ig3rdma)
	// IRDMA_GEN_3. Before Linux 6.16 irdma_hw_stat_names prints the TCP and RDMA statistics with
	// a prefix ([IRDMA_HW_STAT_INDEX_TCPRTXSEG] = "tcpRetransSegs", "iwInRdmaReads", ...), which
	// "RDMA/irdma: Add GEN3 HW statistics support" (6.16) drops in irdma_hw_stat_descs
	// ("RetransSegs", "InRdmaReads") while adding the GEN_3 names, which contain spaces.
	// Congestion (cnp*, RxECNMrkd) keeps its names.
	"tcpRetransSegs":            {kind: kindTransportEvent},
	"cnpSent":                   {kind: kindCNP},
	"cnpHandled":                {kind: kindCNP},
	"cnpIgnored":                {kind: kindCNP},
	"RxECNMrkd":                 {kind: kindECN},
	"RetransSegs":               {kind: kindTransportEvent},
	"RTO":                       {kind: kindTransportEvent},
	"Nak Sequence Error":        {kind: kindTransportEvent},
	"Rcvd Out of order packets": {kind: kindTransportEvent},
	"CRC errors":                {kind: kindTransportError},

	// AWS EFA port statistics (drivers/infiniband/hw/efa/efa_verbs.c, EFA_DEFINE_PORT_STATS; the
	// values are efa_com_cmd.h efa_com_basic_stats, efa_com_rdma_read/write_stats and, on Nitro
	// v4 and later, efa_com_network_stats): SRD retransmits and path events, drops and work
	// request errors, and the bytes split by operation (rnic.operation.io): transmit is what the
	// port sent (its sends, its RDMA writes, its responses to remote reads), receive the reverse.
	"retrans_pkts":                {kind: kindTransportEvent},
	"retrans_timeout_events":      {kind: kindTransportEvent},
	"unresponsive_remote_events":  {kind: kindTransportEvent},
	"impaired_remote_conn_events": {kind: kindTransportEvent},
	"rx_drops":                    {kind: kindTransportError},
	"rdma_read_wr_err":            {kind: kindTransportError},
	"rdma_write_wr_err":           {kind: kindTransportError},
	"send_bytes":                  {kind: kindOperationBytes, direction: metadata.AttributeDirectionTransmit, operation: metadata.AttributeOperationSend},
	"recv_bytes":                  {kind: kindOperationBytes, direction: metadata.AttributeDirectionReceive, operation: metadata.AttributeOperationSend},
	"rdma_write_bytes":            {kind: kindOperationBytes, direction: metadata.AttributeDirectionTransmit, operation: metadata.AttributeOperationRdmaWrite},
	"rdma_write_recv_bytes":       {kind: kindOperationBytes, direction: metadata.AttributeDirectionReceive, operation: metadata.AttributeOperationRdmaWrite},
	"rdma_read_resp_bytes":        {kind: kindOperationBytes, direction: metadata.AttributeDirectionTransmit, operation: metadata.AttributeOperationRdmaRead},
	"rdma_read_bytes":             {kind: kindOperationBytes, direction: metadata.AttributeDirectionReceive, operation: metadata.AttributeOperationRdmaRead},
}

// vportPrefix starts the hw_counters names of mlx5 ports in switchdev mode: the representor ports
// get the INIT_VPORT_Q_COUNTER names ("vport_" + the Q counter name) while the normal names, the
// congestion and the ICRC counters move to the device-level hw_counters/ directory
// (drivers/infiniband/hw/mlx5/counters.c, hw_switchdev_stats_ops, alloc_hw_device_stats).
const vportPrefix = "vport_"

// hwCounterDef looks a hw_counters name up, switchdev's vport_ names under their plain name.
func hwCounterDef(name string) (counterDef, string, bool) {
	if def, ok := hwCounters[name]; ok {
		return def, name, true
	}
	if plain, ok := strings.CutPrefix(name, vportPrefix); ok {
		if def, ok := hwCounters[plain]; ok {
			return def, plain, true
		}
	}
	return counterDef{}, name, false
}

// mlx5CacheRefresh is the hw_counters file whose read refreshes mlx5's counter cache. The core's
// update_hw_stats (drivers/infiniband/core/sysfs.c) renews the cache timestamp only when the
// driver's get_hw_stats returns the full count, and mlx5_ib_get_hw_stats returns it only for
// index 0, rx_write_requests (drivers/infiniband/hw/mlx5/counters.c). Reading it first makes the
// other files of the port come from that one snapshot within `lifespan` instead of each costing
// its own firmware queries.
const mlx5CacheRefresh = "rx_write_requests"

// hwTrafficSources are the driver byte and packet counters in hw_counters/, used only for ports
// whose PMA data counters cannot be read. For each metric and direction the alternatives are
// tried in order and the first one present is used; the files of one alternative are summed.
// They count plain bytes: no 4-octet unit.
//   - bnxt_re (hw_counters.c): tx/rx_roce_only_bytes and _pkts (the RoCE engine's own
//     counters, extended stats of P5 chips; the driver's PMA path prefers them too), else
//     tx/rx_bytes and _pkts (the function context's unicast counters). The extended files exist
//     on every P5 chip (bnxt_re_ib_alloc_hw_port_stats) but bnxt_re_ib_get_hw_stats fills them
//     only `if (_is_ext_stats_supported(...) && !rdev->is_virtfn)`: on a VF, or on firmware
//     without extended stats, they stay 0 and the plain ones are used (counterPlanner.extFilled).
//     efa has tx/rx_bytes too (efa_verbs.c).
//   - rxe: sent_pkts / rcvd_pkts (and bytes with the perf-mgmt patches).
//   - irdma: ip4 + ip6 Octets and Pkts of the protocol engine (irdma verbs.c).
var hwTrafficSources = []struct {
	kind      metricKind
	direction metadata.AttributeDirection
	files     [][]string
}{
	{kindBytes, metadata.AttributeDirectionTransmit, [][]string{{"tx_roce_only_bytes"}, {"tx_bytes"}, {"sent_bytes"}, {"ip4OutOctets", "ip6OutOctets"}}},
	{kindBytes, metadata.AttributeDirectionReceive, [][]string{{"rx_roce_only_bytes"}, {"rx_bytes"}, {"rcvd_bytes"}, {"ip4InOctets", "ip6InOctets"}}},
	{kindPackets, metadata.AttributeDirectionTransmit, [][]string{{"tx_roce_only_pkts"}, {"tx_pkts"}, {"sent_pkts"}, {"ip4OutPkts", "ip6OutPkts"}}},
	{kindPackets, metadata.AttributeDirectionReceive, [][]string{{"rx_roce_only_pkts"}, {"rx_pkts"}, {"rcvd_pkts"}, {"ip4InPkts", "ip6InPkts"}}},
}

// bnxtExtStats are the bnxt_re counters that only the extended stats query fills
// (bnxt_re_copy_ext_stats, the only writer of BNXT_RE_TX/RX_ROCE_BYTES and _PKTS).
var bnxtExtStats = map[string]bool{
	"tx_roce_only_bytes": true, "rx_roce_only_bytes": true, "tx_roce_only_pkts": true, "rx_roce_only_pkts": true,
}

// counterFile is one file read on every scrape, with what to do with its value.
type counterFile struct {
	path string // absolute
	key  string // the key of its series: path, or for a sum the paths joined
	// sum are further files added to path's value (irdma's ip4 + ip6 octets).
	sum  []string
	name string // the kernel's counter name
	// label is the name the counter carries in the named metrics: name without switchdev's
	// vport_ prefix.
	label     string
	owner     string // the device attribute of the points: the port, or the device for device-level counters
	kind      metricKind
	direction metadata.AttributeDirection
	operation metadata.AttributeOperation
	spec      counter.Spec
	// scale converts the counter's unit into the metric's (4 for PMA data counters).
	scale uint64
	// source is set when the file also feeds rnic.driver.counter.
	source metadata.AttributeCounterSource
	driver bool
	// slow marks a counter read only every slow_interval (Config.SlowInterval, slowCountersDue).
	slow bool
	// primer marks mlx5CacheRefresh read only to refresh the driver's counter cache.
	primer bool

	// raw and errs are the current scrape's reading: the sum, and each file's error (path, then
	// sum), written by the device's reading goroutine (readgroup.go).
	raw  uint64
	errs []error
	// flagged: rnic.counter.saturated said 1 for it; from then on it says 0 while the counter
	// reads normally.
	flagged bool
	// off: the hardware does not provide one of its files; it is not read again.
	off bool
}

// file returns the path of the counter's i-th file: path, then the files of the sum.
func (cf *counterFile) file(i int) string {
	if i == 0 {
		return cf.path
	}
	return cf.sum[i-1]
}

// points is how many points the counter feeds: what a failed read costs.
func (cf *counterFile) points() int {
	n := 0
	if cf.kind != kindNone {
		n++
	}
	if cf.driver {
		n++
	}
	return n
}

// slowKind reports whether counters of the kind move rarely enough to be read every slow_interval
// only: errors and transport events, which dashboards and alerts read through rate() over 20 s or
// more. Traffic and congestion (bytes, packets, port_xmit_wait, CNPs, ECN marks) are not.
func slowKind(k metricKind) bool {
	switch k {
	case kindPortError, kindTransportEvent, kindTransportError, kindNone:
		return true
	}
	return false
}

func specFor(width uint8, wraps bool) counter.Spec {
	if width == 0 || width >= 64 {
		return counter.Spec{Kind: counter.Monotonic}
	}
	if wraps {
		return counter.Spec{Kind: counter.Wrapping, Width: width}
	}
	return counter.Spec{Kind: counter.Saturating, Width: width}
}

// pmaWraps reports whether the driver's PMA error counters wrap instead of saturating as IBA
// requires: the bnxt_re PMA support ("RDMA/bnxt_re: Support Perf management counters", 2025)
// fills the 16- and 8-bit fields by truncation, (u16)(x & 0xFFFF) and (u8)(x & 0xFF).
func pmaWraps(driver string) bool { return driver == "bnxt_en" || driver == "bnxt_re" }

//go:build integration

package otelcoliclens_test

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/owner/ownertest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// ownerJoin is the README's join (receiver/ownerreceiver/README.md, "Queries") on the counters
// themselves instead of their rate, so that the expected numbers are the bytes the test wrote.
const ownerJoin = `sum by (host_name, %s, component) (
    interconnect_io_bytes_total{direction="transmit"}
  * on (host_name, component, pci_bus_id) group_left (%s)
    (interconnect_owner{owner_kind=%q} == 1))`

// TestOwnerJoinInPrometheus runs the built collector's rnic and owner receivers on the DGX H100
// stand-in (internal/owner/ownertest: the testfs PCI tree, the NVIDIA driver's procfs, an SR-IOV
// VF) with a Slurm prolog's mapping directory (GPUs 0-3 job 4711, GPUs 4-7 job 4712) and a fake
// kubelet that gives the VF to a pod, pushes into a real Prometheus with remote write, and asks
// Prometheus the bytes per job and per pod. Then the prolog of job 4720 takes GPUs 0-3: the join
// moves their NICs' bytes to 4720 at once, and interconnect.io keeps its series, the same as a
// collector without the owner receiver reading the same node.
func TestOwnerJoinInPrometheus(t *testing.T) {
	bin := collectorBinary(t)
	prom := startPrometheus(t)
	root := ownertest.WriteDGXNode(t)
	node := testfs.DGXH100Node()
	jobs := filepath.Join(root, "run", "jobs")
	mapping := &testfs.Tree{}
	for i := 0; i < 8; i++ {
		job := "4711 alice train"
		if i >= 4 {
			job = "4712 bob train"
		}
		mapping.SlurmMapping("run/jobs", strconv.Itoa(i), job)
	}
	require.NoError(t, mapping.Write(root))
	kubelet := ownertest.StartKubelet(t, ownertest.SocketPath(t))
	kubelet.SetPods(ownertest.Pod("ml", "vf-user", "main", map[string][]string{"nvidia.com/sriov_rdma": {ownertest.VFAddress}}))

	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(fmt.Sprintf(`
receivers:
  rnic:
    collection_interval: 500ms
    root_path: %[1]s
    ethtool: {enabled: false}
    topology: {enabled: false}
  owner:
    collection_interval: 500ms
    refresh_interval: 250ms
    root_path: %[1]s
    slurm: {enabled: true, mapping_dir: %[2]s}
    kubernetes: {enabled: true, socket: %[3]s, timeout: 1s}
processors:
  resource:
    attributes: [{key: host.name, value: owner-node, action: upsert}]
exporters:
  prometheus_remote_write:
    endpoint: http://%[4]s/api/v1/write
    resource_to_telemetry_conversion: {enabled: true}
service:
  pipelines:
    metrics: {receivers: [rnic, owner], processors: [resource], exporters: [prometheus_remote_write]}
  telemetry: {metrics: {level: none}}
`, root, jobs, kubelet.Socket, prom)), 0o644))
	logs := startCollectorWith(t, bin, cfgPath, nil)
	// The same node without the owner receiver, as another host: interconnect.io must have the
	// same series with attribution on and off.
	startCollector(t, bin, fmt.Sprintf(`
receivers:
  rnic:
    collection_interval: 500ms
    root_path: %s
    ethtool: {enabled: false}
    topology: {enabled: false}
processors:
  resource:
    attributes: [{key: host.name, value: plain-node, action: upsert}]
exporters:
  prometheus_remote_write:
    endpoint: http://%s/api/v1/write
    resource_to_telemetry_conversion: {enabled: true}
service:
  pipelines:
    metrics: {receivers: [rnic], processors: [resource], exporters: [prometheus_remote_write]}
  telemetry: {metrics: {level: none}}
`, root, prom))

	perOwner := func(label, kind string) map[string]float64 {
		out := map[string]float64{}
		for _, s := range promQuery(t, prom, fmt.Sprintf(ownerJoin, label, label, kind)) {
			out[s.labels[label]+" "+s.labels["component"]] = s.value
		}
		return out
	}
	// The counters count from the first reading (metadata/start-time.md): wait for it, then let
	// the bytes move.
	first := waitFor(func() map[string]float64 { return perOwner("job_id", "job") },
		map[string]float64{"4711 rnic": 0, "4711 netdev": 0, "4712 rnic": 0, "4712 netdev": 0})
	require.Equal(t, map[string]float64{"4711 rnic": 0, "4711 netdev": 0, "4712 rnic": 0, "4712 netdev": 0}, first,
		"both jobs' NICs and netdevs joined before any byte moved")

	// Transmit words per compute NIC i: (i+1)*1000; at 4 bytes a word (the PMA's unit) that is
	// 4000*(2+3+4) for job 4711's NICs (mlx5_0's port also carries the pod's VF: shared) and
	// 4000*(5+6+7+8) for job 4712's; the VF 500 words.
	counter := func(addr, dev string) string {
		return path.Join("sys", testfs.FunctionRel(node, addr), "infiniband", dev, "ports", "1", "counters", "port_xmit_data")
	}
	for i := 0; i < 8; i++ {
		testfs.SetUint(t, root, counter(ownertest.NICAddress(i), ownertest.NICName(i)), uint64(i+1)*1000)
	}
	vf := path.Join("sys", path.Dir(testfs.FunctionRel(node, ownertest.NICAddress(0))), ownertest.VFAddress, "infiniband", ownertest.VFName, "ports", "1", "counters", "port_xmit_data")
	testfs.SetUint(t, root, vf, 500)

	want := map[string]float64{"4711 rnic": 36000, "4711 netdev": 0, "4712 rnic": 104000, "4712 netdev": 0}
	got := waitFor(func() map[string]float64 { return perOwner("job_id", "job") }, want)
	require.Equal(t, want, got, "bytes per job in Prometheus (waited 60 s for them)\nowner: %v\nio: %v",
		promQuery(t, prom, `interconnect_owner{component="rnic"}`), promQuery(t, prom, `interconnect_io_bytes_total{component="rnic",direction="transmit"}`))
	assert.Equal(t, map[string]float64{"vf-user rnic": 2000}, perOwner("k8s_pod_name", "pod"), "the VF's bytes are its pod's (the VF has no netdev)")
	shared := promQuery(t, prom, `count(interconnect_owner{owner_kind="shared",component="rnic"} == 1)`)
	require.NotEmpty(t, shared)
	assert.Equal(t, 5.0, shared[0].value, "the four storage functions serve no GPU, mlx5_0's port serves job and pod: shared")
	seriesByHost := func() map[string]float64 {
		out := map[string]float64{}
		for _, s := range promQuery(t, prom, `count by (host_name) (interconnect_io_bytes_total)`) {
			out[s.labels["host_name"]] = s.value
		}
		return out
	}
	// 13 RDMA ports and 12 netdevs, two directions each, with the owner receiver on and off.
	wantSeries := map[string]float64{"owner-node": 2 * (13 + 12), "plain-node": 2 * (13 + 12)}
	require.Equal(t, wantSeries, waitFor(seriesByHost, wantSeries), "interconnect.io has the same series with attribution on and off")

	// Job 4720's prolog takes GPUs 0-3.
	for i := 0; i < 4; i++ {
		require.NoError(t, os.WriteFile(filepath.Join(jobs, strconv.Itoa(i)), []byte("4720 carol train\n"), 0o644))
	}
	want = map[string]float64{"4720 rnic": 36000, "4720 netdev": 0, "4712 rnic": 104000, "4712 netdev": 0}
	got = waitFor(func() map[string]float64 { return perOwner("job_id", "job") }, want)
	require.Equal(t, want, got, "bytes per job after the switch (waited 60 s for them)")
	assert.Equal(t, wantSeries, seriesByHost(), "interconnect.io keeps its series across the job switch")
	assert.Empty(t, promQuery(t, prom, `interconnect_io_bytes_total{job_id!=""}`), "no owner label on interconnect.io")
	assert.NotContains(t, logs.String(), "\terror\t")
}

// waitFor polls query until it returns want, for at most a minute (the collector's scrapes at
// 500 ms, the resolver's refresh at 250 ms and a remote-write push between), and returns its
// last answer.
func waitFor(query func() map[string]float64, want map[string]float64) map[string]float64 {
	deadline := time.Now().Add(time.Minute)
	for {
		got := query()
		if assert.ObjectsAreEqual(want, got) || time.Now().After(deadline) {
			return got
		}
		time.Sleep(250 * time.Millisecond)
	}
}

package owner_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-iclens/otelcol-iclens/internal/owner"
	"github.com/otelcol-iclens/otelcol-iclens/internal/owner/ownertest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// owners renders a snapshot as "component pci.bus_id" -> owner in words, the shape the info
// series take.
func owners(s *owner.Snapshot) map[string]string {
	out := map[string]string{}
	for _, a := range s.Assignments {
		out[a.Component+" "+a.PCIBusID] = a.Owner.String()
	}
	return out
}

func ownerOf(s *owner.Snapshot, component, addr string) owner.Owner {
	for _, a := range s.Assignments {
		if a.Component == component && a.PCIBusID == addr {
			return a.Owner
		}
	}
	return owner.Owner{}
}

func newResolver(t *testing.T, cfg owner.Config, root string) (*owner.Resolver, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zap.InfoLevel)
	r, err := owner.NewResolver(cfg, root, zap.New(core))
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Shutdown() })
	return r, logs
}

func kubernetesConfig(socket string) owner.Config {
	cfg := owner.DefaultConfig()
	cfg.Kubernetes.Enabled = true
	cfg.Kubernetes.Socket = socket
	return cfg
}

// TestKubernetesPodResources follows the NVIDIA device plugin's ids (UUIDs, `::N` time-slicing
// replicas, MIG-GPU-<uuid>/<gi>/<ci>, GKE's nvidia<minor>, index strategy) and the SR-IOV network
// device plugin's VF PCI addresses, as dcgm-exporter's kubernetes.go handles them.
func TestKubernetesPodResources(t *testing.T) {
	root := ownertest.WriteDGXNode(t)
	k := ownertest.StartKubelet(t, ownertest.SocketPath(t))
	k.SetPods(
		ownertest.Pod("ml", "trainer-a", "main", map[string][]string{
			"nvidia.com/gpu":        {ownertest.GPUUUID(0), ownertest.GPUUUID(1), ownertest.GPUUUID(2), ownertest.GPUUUID(3)},
			"nvidia.com/sriov_rdma": {ownertest.VFAddress},
		}),
		ownertest.Pod("ml", "trainer-b", "main", map[string][]string{"nvidia.com/gpu": {"nvidia4", "5"}}),
		ownertest.Pod("dev", "notebook-c", "lab", map[string][]string{"nvidia.com/gpu": {ownertest.GPUUUID(6) + "::0"}}),
		ownertest.Pod("dev", "notebook-d", "lab", map[string][]string{"nvidia.com/gpu": {ownertest.GPUUUID(6) + "::1"}}),
		ownertest.Pod("inf", "serve-e", "srv", map[string][]string{"nvidia.com/mig-1g.10gb": {"MIG-" + ownertest.GPUUUID(7) + "/1/0"}}),
		ownertest.Pod("inf", "rdma-f", "srv", map[string][]string{"rdma/hca_shared_devices_a": {"hca_shared_devices_a_3"}}),
	)
	r, logs := newResolver(t, kubernetesConfig(k.Socket), root)
	r.Refresh(context.Background())
	s := r.Snapshot()
	got := owners(s)

	podA, podB := "pod ml/trainer-a/main", "pod ml/trainer-b/main"
	for i := 0; i < 4; i++ {
		for _, c := range []string{"gpu_pcie", "gpu_nvlink", "gpu_c2c"} {
			assert.Equal(t, podA, got[c+" "+ownertest.GPUAddress(i)], "GPU %d %s", i, c)
		}
	}
	assert.Equal(t, podB, got["gpu_pcie "+ownertest.GPUAddress(4)], "nvidia<minor> id")
	assert.Equal(t, podB, got["gpu_pcie "+ownertest.GPUAddress(5)], "index id")
	assert.Equal(t, "shared", got["gpu_pcie "+ownertest.GPUAddress(6)], "two pods on time-sliced replicas of one GPU")
	assert.Equal(t, "pod inf/serve-e/srv", got["gpu_pcie "+ownertest.GPUAddress(7)], "MIG id with its parent's UUID")

	// The VF is the pod's by its PCI address; the PF mlx5_0 is the nearest NIC of GPU 0 only.
	assert.Equal(t, podA, got["rnic "+ownertest.VFAddress])
	assert.Equal(t, owner.SourceKubernetes, ownerOf(s, "rnic", ownertest.VFAddress).Source)
	assert.Equal(t, podA, got["rnic "+ownertest.NICAddress(0)])
	assert.Equal(t, owner.SourceRule, ownerOf(s, "rnic", ownertest.NICAddress(0)).Source)
	assert.Equal(t, podA, got["netdev "+ownertest.NICAddress(0)], "the PF's IPoIB netdev follows the port")
	assert.Equal(t, podB, got["rnic "+ownertest.NICAddress(4)])
	assert.Equal(t, "shared", got["rnic "+ownertest.NICAddress(6)], "nearest NIC of a shared GPU")
	// Storage NICs (mlx5_1 at 0000:29:00.0) are nobody's nearest: shared.
	assert.Equal(t, "shared", got["rnic 0000:29:00.0"])

	// Root ports: GPU 0, mlx5_0 and its VF below 0000:15:01.0, all pod A.
	assert.Equal(t, podA, got["cpu_pcie "+testfs.FunctionAddress(testfs.DGXComputeNICs[0].Bus-3, 1, 0)])
	assert.Equal(t, "shared", got["cpu_pcie "+testfs.FunctionAddress(testfs.DGXComputeNICs[6].Bus-3, 1, 0)])
	assert.Equal(t, "shared", got["cpu_pcie 0000:28:01.0"], "storage root port")
	assert.Equal(t, "shared", got["cpu_pcie "])
	assert.Equal(t, "node", got["cpu_memory "])

	// The shared device plugin's slots are said, once and at info, as giving no per-pod owner;
	// nothing here is a fault.
	lines := logs.FilterMessageSnippet("no per-device owner").All()
	require.Len(t, lines, 1)
	assert.Equal(t, zap.InfoLevel, lines[0].Level)
	assert.Contains(t, lines[0].ContextMap()["error"], "no per-pod owner")
	r.Refresh(context.Background())
	assert.Equal(t, 1, logs.FilterMessageSnippet("no per-device owner").Len(), "said once")
	assert.Zero(t, logs.FilterLevelExact(zap.WarnLevel).Len(), "%v", logs.All())
}

// TestKubernetesPodWithTooManyDevices: a pod listing 1000 device ids loses its own devices, with
// a line naming it; the other pods keep theirs.
func TestKubernetesPodWithTooManyDevices(t *testing.T) {
	root := ownertest.WriteDGXNode(t)
	k := ownertest.StartKubelet(t, ownertest.SocketPath(t))
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = ownertest.GPUUUID(1)
	}
	k.SetPods(
		ownertest.Pod("ml", "good", "main", map[string][]string{"nvidia.com/gpu": {ownertest.GPUUUID(0)}}),
		ownertest.Pod("ml", "huge", "main", map[string][]string{"nvidia.com/gpu": ids}),
	)
	r, logs := newResolver(t, kubernetesConfig(k.Socket), root)
	r.Refresh(context.Background())
	got := owners(r.Snapshot())
	assert.Equal(t, "pod ml/good/main", got["gpu_pcie "+ownertest.GPUAddress(0)])
	assert.NotContains(t, got, "gpu_pcie "+ownertest.GPUAddress(1), "the huge pod's GPU has no owner")
	lines := logs.FilterField(zap.String("key", "pod ml/huge")).All()
	require.Len(t, lines, 1)
	assert.Contains(t, lines[0].ContextMap()["error"], "1000 device ids")
}

// TestKubernetesSocketHangs: a socket that accepts and never answers costs the Kubernetes source
// one deadline per refresh, said once; the Slurm source's owners are still there.
func TestKubernetesSocketHangs(t *testing.T) {
	root := ownertest.WriteDGXNode(t)
	socket := ownertest.SocketPath(t)
	l, err := net.Listen("unix", socket)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() }) // held open, never read: a hung kubelet
		}
	}()
	mapping := filepath.Join(root, "jobs")
	tree := &testfs.Tree{}
	tree.SlurmMapping("jobs", "0", "4711")
	require.NoError(t, tree.Write(root))

	cfg := kubernetesConfig(socket)
	cfg.Kubernetes.Timeout = 200 * time.Millisecond
	cfg.Slurm = owner.SlurmConfig{Enabled: true, MappingDir: mapping}
	r, logs := newResolver(t, cfg, root)
	// Three refreshes return (each List has its deadline); the test's own timeout is what waits.
	for i := 0; i < 3; i++ {
		r.Refresh(context.Background())
	}
	assert.Equal(t, "job 4711", owners(r.Snapshot())["gpu_pcie "+ownertest.GPUAddress(0)])
	lines := logs.FilterMessageSnippet("source unavailable").All()
	require.Len(t, lines, 1, "said once, not every refresh")
	assert.Contains(t, lines[0].ContextMap()["error"], "DeadlineExceeded")
}

// TestKubernetesSourceRecovers: absent at start (said once), present later (said once more), and
// the pods' owners appear.
func TestKubernetesSourceRecovers(t *testing.T) {
	root := ownertest.WriteDGXNode(t)
	socket := ownertest.SocketPath(t)
	cfg := kubernetesConfig(socket)
	cfg.Kubernetes.Timeout = 200 * time.Millisecond
	r, logs := newResolver(t, cfg, root)
	r.Refresh(context.Background())
	r.Refresh(context.Background())
	require.Equal(t, 1, logs.FilterMessageSnippet("source unavailable").Len())

	k := ownertest.StartKubelet(t, socket)
	k.SetPods(ownertest.Pod("ml", "late", "main", map[string][]string{"nvidia.com/gpu": {ownertest.GPUUUID(2)}}))
	// gRPC redials with its own backoff (1 s, then growing); wait for the kubelet to be asked.
	deadline := time.Now().Add(60 * time.Second)
	for k.Calls() == 0 && time.Now().Before(deadline) {
		r.Refresh(context.Background())
		time.Sleep(100 * time.Millisecond)
	}
	require.NotZero(t, k.Calls(), "the resolver never reached the kubelet that came up")
	assert.Equal(t, "pod ml/late/main", owners(r.Snapshot())["gpu_pcie "+ownertest.GPUAddress(2)])
	assert.Equal(t, 1, logs.FilterMessageSnippet("source available again").Len())
}

// TestSlurmMappingDirectory follows dcgm-exporter's HPC mapping format (a file per GPU index,
// one job a line, <index>.<gi> for MIG) and a job switch.
func TestSlurmMappingDirectory(t *testing.T) {
	root := ownertest.WriteDGXNode(t)
	tree := &testfs.Tree{}
	for i := 0; i < 4; i++ {
		tree.SlurmMapping("jobs", strconv.Itoa(i), "4711 alice train")
	}
	tree.SlurmMapping("jobs", "4", "4712")
	tree.SlurmMapping("jobs", "5", "rm -rf / # not a job")
	tree.SlurmMapping("jobs", "6.1", "4713")
	tree.SlurmMapping("jobs", "6.2", "4714")
	tree.SlurmMapping("jobs", "7")                          // emptied by the epilog
	tree.SlurmMapping("jobs", "9", "4715")                  // no GPU 9 here
	tree.SlurmMapping("jobs", ownertest.NICName(4), "4712") // the prolog names the NIC too
	tree.SlurmMapping("jobs", ".4716.tmp", "4716")          // a prolog's file being written
	require.NoError(t, tree.Write(root))

	cfg := owner.DefaultConfig()
	cfg.Slurm = owner.SlurmConfig{Enabled: true, MappingDir: filepath.Join(root, "jobs")}
	r, logs := newResolver(t, cfg, root)
	r.Refresh(context.Background())
	s := r.Snapshot()
	got := owners(s)
	a := ownerOf(s, "gpu_nvlink", ownertest.GPUAddress(0))
	assert.Equal(t, owner.Owner{Kind: owner.KindJob, Source: owner.SourceSlurm, JobID: "4711", User: "alice", Partition: "train"}, a)
	assert.Equal(t, "job 4712", got["gpu_pcie "+ownertest.GPUAddress(4)])
	assert.Equal(t, "job 4712", got["rnic "+ownertest.NICAddress(4)])
	assert.Equal(t, owner.SourceSlurm, ownerOf(s, "rnic", ownertest.NICAddress(4)).Source, "named by the prolog, not by the rule")
	assert.NotContains(t, got, "gpu_pcie "+ownertest.GPUAddress(5), "garbage: unknown")
	assert.Equal(t, "shared", got["gpu_pcie "+ownertest.GPUAddress(6)], "two jobs on two MIG instances of one GPU")
	assert.NotContains(t, got, "gpu_pcie "+ownertest.GPUAddress(7))

	warned := map[string]string{}
	for _, l := range logs.FilterMessageSnippet("entry ignored").All() {
		warned[filepath.Base(l.ContextMap()["key"].(string))] = l.ContextMap()["error"].(string)
	}
	assert.Len(t, warned, 2)
	assert.Contains(t, warned["5"], `line 1: not "<job id> [user [partition]]"`)
	assert.Contains(t, warned["9"], "names no GPU index")

	// The job switch: 4711 ends on GPU 0, 4720 starts; the next refresh has it.
	require.NoError(t, os.WriteFile(filepath.Join(root, "jobs", "0"), []byte("4720\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "jobs", "5"), []byte("4712\n"), 0o644))
	r.Refresh(context.Background())
	got = owners(r.Snapshot())
	assert.Equal(t, "job 4720", got["gpu_pcie "+ownertest.GPUAddress(0)])
	assert.Equal(t, "job 4712", got["gpu_pcie "+ownertest.GPUAddress(5)])
	assert.Equal(t, "job 4720", got["cpu_pcie "+testfs.FunctionAddress(testfs.DGXComputeNICs[0].Bus-3, 1, 0)],
		"GPU 0 and its nearest NIC below one root port, the idle VF not counted")
	assert.Equal(t, 1, logs.FilterMessageSnippet("entry read again").Len(), "file 5 said once more, when it was fixed")
}

// TestSlurmMappingDirectoryAbsent: said once; no owners; nothing else lost.
func TestSlurmMappingDirectoryAbsent(t *testing.T) {
	root := ownertest.WriteDGXNode(t)
	cfg := owner.DefaultConfig()
	cfg.Slurm = owner.SlurmConfig{Enabled: true, MappingDir: filepath.Join(root, "nope")}
	r, logs := newResolver(t, cfg, root)
	r.Refresh(context.Background())
	r.Refresh(context.Background())
	assert.Equal(t, 1, logs.FilterMessageSnippet("source unavailable").Len())
	got := owners(r.Snapshot())
	assert.Equal(t, "node", got["cpu_memory "])
	assert.NotContains(t, got, "gpu_pcie "+ownertest.GPUAddress(0))
}

// TestProcessSource: processes holding /dev/nvidia<minor> open (fs/proc/fd.c links) give the GPU
// their job, from SLURM_JOB_ID in environ or the job_<id> of their cgroup.
func TestProcessSource(t *testing.T) {
	root := ownertest.WriteDGXNode(t)
	procs := []testfs.Process{{PID: 100, Environ: []string{"PATH=/bin", "SLURM_JOB_ID=4800", "SLURM_JOB_USER=bob", "SLURM_JOB_PARTITION=gpu"},
		FDs: map[int]string{0: "/dev/null", 3: "/dev/nvidiactl", 4: "/dev/nvidia2", 5: "/dev/nvidia-uvm"}},
		{PID: 101, Cgroup: "0::/system.slice/slurmstepd.scope/job_4801/step_0/user/task_0",
			FDs: map[int]string{4: "/dev/nvidia3"}},
		{PID: 102, Cgroup: "0::/system.slice/nvidia-persistenced.service", FDs: map[int]string{4: "/dev/nvidia1"}}}
	tree := &testfs.Tree{}
	for _, p := range procs {
		tree.ProcessEntry(p)
	}
	require.NoError(t, tree.Write(root))
	for _, p := range procs {
		testfs.WriteProcessFDs(t, root, p)
	}

	cfg := owner.DefaultConfig()
	cfg.Process.Enabled = true
	r, _ := newResolver(t, cfg, root)
	r.Refresh(context.Background())
	s := r.Snapshot()
	assert.Equal(t, owner.Owner{Kind: owner.KindJob, Source: owner.SourceProcess, JobID: "4800", User: "bob", Partition: "gpu"}, ownerOf(s, "gpu_pcie", ownertest.GPUAddress(2)))
	assert.Equal(t, "job 4801", ownerOf(s, "gpu_pcie", ownertest.GPUAddress(3)).String())
	assert.False(t, ownerOf(s, "gpu_pcie", ownertest.GPUAddress(1)).Known(), "a node daemon owns no GPU")
}

// TestStaticFile: owners written down by hand, every name the other sources use.
func TestStaticFile(t *testing.T) {
	root := ownertest.WriteDGXNode(t)
	path := filepath.Join(root, "owners.yaml")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join([]string{
		"devices:",
		"  - {device: " + ownertest.GPUUUID(0) + ", job_id: '9000', user: carol}",
		"  - {device: '1', job_id: '9000'}",
		"  - {device: " + ownertest.NICName(1) + ", namespace: ml, pod: p, container: c}",
		"  - {device: nonsense, job_id: '9001'}",
		"  - {device: '2'}",
	}, "\n")), 0o644))
	cfg := owner.DefaultConfig()
	cfg.Static = owner.StaticConfig{Enabled: true, Path: path}
	r, logs := newResolver(t, cfg, root)
	r.Refresh(context.Background())
	got := owners(r.Snapshot())
	assert.Equal(t, "job 9000", got["gpu_pcie "+ownertest.GPUAddress(0)])
	assert.Equal(t, "job 9000", got["gpu_pcie "+ownertest.GPUAddress(1)])
	assert.Equal(t, "pod ml/p/c", got["rnic "+ownertest.NICAddress(1)])
	assert.Equal(t, 2, logs.FilterMessageSnippet("entry ignored").Len())
}

func TestConfigValidate(t *testing.T) {
	cfg := owner.DefaultConfig()
	require.NoError(t, cfg.Validate())
	cfg.RefreshInterval = 0
	cfg.Kubernetes.Enabled = true
	cfg.Kubernetes.Timeout = 0
	cfg.Slurm.Enabled = true
	cfg.Slurm.MappingDir = ""
	err := cfg.Validate()
	require.Error(t, err)
	for _, want := range []string{"refresh_interval: must be positive, got 0s", "kubernetes.timeout: must be positive, got 0s", `slurm.mapping_dir: must be set, got ""`} {
		assert.Contains(t, err.Error(), want)
	}
}

// TestResolverRefreshesOnItsOwn: after Start the resolver reads its sources on its ticker; a job
// switch in the mapping directory reaches Snapshot without anyone calling Refresh.
func TestResolverRefreshesOnItsOwn(t *testing.T) {
	root := ownertest.WriteDGXNode(t)
	tree := &testfs.Tree{}
	tree.SlurmMapping("jobs", "0", "4711")
	require.NoError(t, tree.Write(root))
	cfg := owner.DefaultConfig()
	cfg.RefreshInterval = 20 * time.Millisecond
	cfg.Slurm = owner.SlurmConfig{Enabled: true, MappingDir: filepath.Join(root, "jobs")}
	r, _ := newResolver(t, cfg, root)
	r.Start(context.Background())
	assert.Equal(t, "job 4711", owners(r.Snapshot())["gpu_pcie "+ownertest.GPUAddress(0)], "Start refreshes once before it returns")
	require.NoError(t, os.WriteFile(filepath.Join(root, "jobs", "0"), []byte("4712\n"), 0o644))
	// The ticker's next refresh is what is waited for; the deadline is generous on a loaded machine.
	assert.Eventually(t, func() bool {
		return owners(r.Snapshot())["gpu_pcie "+ownertest.GPUAddress(0)] == "job 4712"
	}, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, r.Shutdown())
}

package owner_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/otelcol-iclens/otelcol-iclens/internal/owner"
	"github.com/otelcol-iclens/otelcol-iclens/internal/owner/ownertest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// BenchmarkRefresh is one refresh of the resolver on the DGX H100 stand-in with the Slurm
// mapping directory of eight GPUs and a fake kubelet with eight pods, one on each compute NIC's PF, (the inventory, read every
// inventory_interval, kept between refreshes): the cost every refresh_interval.
func BenchmarkRefresh(b *testing.B) {
	root := ownertest.WriteDGXNode(b)
	tree := &testfs.Tree{}
	for i := 0; i < 8; i++ {
		tree.SlurmMapping("jobs", strconv.Itoa(i), "47"+strconv.Itoa(i)+"0 alice train")
	}
	if err := tree.Write(root); err != nil {
		b.Fatal(err)
	}
	k := ownertest.StartKubelet(b, ownertest.SocketPath(b))
	pods := make([]*podresourcesv1.PodResources, 0, 8)
	for i := 0; i < 8; i++ {
		pods = append(pods, ownertest.Pod("ml", "p"+strconv.Itoa(i), "main", map[string][]string{"nvidia.com/sriov_rdma": {ownertest.NICAddress(i)}}))
	}
	k.SetPods(pods...)
	cfg := owner.DefaultConfig()
	cfg.InventoryInterval = time.Hour
	cfg.Slurm = owner.SlurmConfig{Enabled: true, MappingDir: root + "/jobs"}
	cfg.Kubernetes.Enabled = true
	cfg.Kubernetes.Socket = k.Socket
	r, err := owner.NewResolver(cfg, root, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = r.Shutdown() })
	ctx := context.Background()
	r.Refresh(ctx)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r.Refresh(ctx)
	}
	b.ReportMetric(float64(len(r.Snapshot().Assignments)), "assignments")
}

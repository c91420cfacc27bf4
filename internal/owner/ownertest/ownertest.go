// Package ownertest holds the stand-ins the owner resolver's tests share: a DGX H100-like node
// with the NVIDIA driver's procfs and an SR-IOV VF, and an in-process kubelet pod-resources server
// on a unix socket.
package ownertest // import "github.com/otelcol-iclens/otelcol-iclens/internal/owner/ownertest"

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// VF is the SR-IOV VF of mlx5_0 the node has: function 0000:18:00.2, RDMA device mlx5_12.
const (
	VFAddress = "0000:18:00.2"
	VFName    = "mlx5_12"
)

// GPUAddress returns the PCI address of GPU i (NVML index, PCI order) of DGXNode.
func GPUAddress(i int) string { return testfs.FunctionAddress(testfs.DGXComputeNICs[i].Bus+1, 0, 0) }

// NICAddress returns the PCI address of the compute NIC next to GPU i.
func NICAddress(i int) string { return testfs.FunctionAddress(testfs.DGXComputeNICs[i].Bus, 0, 0) }

// NICName returns the RDMA device name of the compute NIC next to GPU i.
func NICName(i int) string { return testfs.DGXComputeNICs[i].RDMA }

// GPUUUID returns GPU i's UUID as the driver prints it.
func GPUUUID(i int) string { return fmt.Sprintf("GPU-5e0a%04d-7c1b-4d2e-9f3a-0123456789ab", i) }

// DGXNode returns the tree of testfs.DGXH100Node with /proc/driver/nvidia/gpus/<addr>/information
// for its eight GPUs (minor = index, as the driver numbers them on a DGX) and one VF on mlx5_0's
// function, ready for Write.
func DGXNode() *testfs.Tree {
	node := testfs.DGXH100Node()
	t := &testfs.Tree{}
	t.PCINode(node)
	gpus := make([]testfs.NvidiaGPU, len(testfs.DGXComputeNICs))
	for i := range gpus {
		gpus[i] = testfs.NvidiaGPU{BusID: GPUAddress(i), UUID: GPUUUID(i), Model: "NVIDIA H100 80GB HBM3", Minor: i}
	}
	t.NvidiaGPUs(gpus)
	t.SRIOVVF(testfs.FunctionRel(node, NICAddress(0)), 0, testfs.PCIFunction{
		Address: VFAddress, Vendor: 0x15b3, DevID: 0x101e, Class: 0x020700, IOMMUGroup: -1, RDMA: VFName,
	}, 0)
	return t
}

// WriteDGXNode writes DGXNode under a new temporary root and returns the root.
func WriteDGXNode(tb testing.TB) string {
	tb.Helper()
	root := tb.TempDir()
	if err := DGXNode().Write(root); err != nil {
		tb.Fatal(err)
	}
	return root
}

// Kubelet is an in-process pod-resources server: List answers with the pods set last.
type Kubelet struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	Socket string

	mu    sync.Mutex
	pods  []*podresourcesv1.PodResources
	calls int
	srv   *grpc.Server
}

// StartKubelet serves the pod-resources API on socket (a short path: a unix socket's path is
// limited to 108 bytes) until the test ends.
func StartKubelet(tb testing.TB, socket string) *Kubelet {
	tb.Helper()
	l, err := net.Listen("unix", socket)
	if err != nil {
		tb.Fatal(err)
	}
	k := &Kubelet{Socket: socket, srv: grpc.NewServer()}
	podresourcesv1.RegisterPodResourcesListerServer(k.srv, k)
	go func() { _ = k.srv.Serve(l) }()
	tb.Cleanup(k.Stop)
	return k
}

// Stop stops serving and removes the socket.
func (k *Kubelet) Stop() {
	k.srv.Stop()
	_ = os.Remove(k.Socket)
}

// SocketPath returns a socket path in a fresh short temporary directory.
func SocketPath(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "podres")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	return filepath.Join(dir, "kubelet.sock")
}

// SetPods replaces what List returns.
func (k *Kubelet) SetPods(pods ...*podresourcesv1.PodResources) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pods = pods
}

// Calls returns how many List calls were answered.
func (k *Kubelet) Calls() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.calls
}

// List implements the pod-resources API.
func (k *Kubelet) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.calls++
	return &podresourcesv1.ListPodResourcesResponse{PodResources: k.pods}, nil
}

// Pod builds a pod with one container holding devices: resource name -> device ids.
func Pod(namespace, name, container string, devices map[string][]string) *podresourcesv1.PodResources {
	c := &podresourcesv1.ContainerResources{Name: container}
	for res, ids := range devices {
		c.Devices = append(c.Devices, &podresourcesv1.ContainerDevices{ResourceName: res, DeviceIds: ids})
	}
	return &podresourcesv1.PodResources{Namespace: namespace, Name: name, Containers: []*podresourcesv1.ContainerResources{c}}
}

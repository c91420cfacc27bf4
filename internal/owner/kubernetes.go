package owner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/otelcol-iclens/otelcol-iclens/internal/pci"
)

// DefaultPodResourcesSocket is where the kubelet serves the pod-resources API
// (pkg/kubelet/apis/podresources: podresources.Socket under the kubelet's root directory).
const DefaultPodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// podResourcesMaxMessage is what the kubelet's own client accepts from List
// (pkg/kubelet/apis/podresources/client.go: defaultPodResourcesMaxSize, 16 MiB).
const podResourcesMaxMessage = 16 << 20

// KubernetesConfig turns the pod-resources source on.
type KubernetesConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// Socket is the kubelet's pod-resources unix socket, as mounted into the collector's container.
	Socket string `mapstructure:"socket"`
	// Timeout is the deadline of every List call (and of the connection it needs).
	Timeout time.Duration `mapstructure:"timeout"`
	// GPUResources are the extended resource names whose device ids are GPUs; MIG resources
	// (nvidia.com/mig-<profile>) always are.
	GPUResources []string `mapstructure:"gpu_resources"`
	// MaxDevicesPerPod bounds the device ids one pod may claim; a pod above it gets no device
	// (logged), so one malformed pod cannot swell the snapshot, and the other pods keep theirs.
	MaxDevicesPerPod int `mapstructure:"max_devices_per_pod"`
}

// kubernetesSource lists the pods' devices from the kubelet. The connection is made once and
// kept; gRPC redials it when the kubelet restarts.
type kubernetesSource struct {
	cfg    KubernetesConfig
	conn   *grpc.ClientConn
	client podresourcesv1.PodResourcesListerClient
}

func newKubernetesSource(cfg KubernetesConfig) (*kubernetesSource, error) {
	conn, err := grpc.NewClient("passthrough:///"+cfg.Socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", cfg.Socket)
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(podResourcesMaxMessage)))
	if err != nil {
		return nil, fmt.Errorf("kubernetes.socket: %w, got %q", err, cfg.Socket)
	}
	return &kubernetesSource{cfg: cfg, conn: conn, client: podresourcesv1.NewPodResourcesListerClient(conn)}, nil
}

func (k *kubernetesSource) name() Source { return SourceKubernetes }

func (k *kubernetesSource) close() error { return k.conn.Close() }

func (k *kubernetesSource) collect(ctx context.Context, inv *Inventory) (Claims, map[string]error, error) {
	ctx, cancel := context.WithTimeout(ctx, k.cfg.Timeout)
	defer cancel()
	resp, err := k.client.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		return nil, nil, fmt.Errorf("pod-resources List on %s: %w", k.cfg.Socket, err)
	}
	claims, problems := k.claims(resp, inv)
	return claims, problems, nil
}

// claims turns a List response into claims. Problems are keyed by pod (or by resource, for ids
// that name no device of the node) so that each is logged once.
func (k *kubernetesSource) claims(resp *podresourcesv1.ListPodResourcesResponse, inv *Inventory) (Claims, map[string]error) {
	claims := Claims{}
	problems := map[string]error{}
	for _, pod := range resp.GetPodResources() {
		podKey := "pod " + pod.GetNamespace() + "/" + pod.GetName()
		n := 0
		for _, c := range pod.GetContainers() {
			for _, d := range c.GetDevices() {
				n += len(d.GetDeviceIds())
			}
		}
		if n > k.cfg.MaxDevicesPerPod {
			problems[podKey] = fmt.Errorf("claims %d device ids, more than kubernetes.max_devices_per_pod (%d): its devices are left without an owner", n, k.cfg.MaxDevicesPerPod)
			continue
		}
		for _, c := range pod.GetContainers() {
			o := Owner{Kind: KindPod, Source: SourceKubernetes, Namespace: pod.GetNamespace(), Pod: pod.GetName(), Container: c.GetName()}
			for _, d := range c.GetDevices() {
				gpu := k.isGPUResource(d.GetResourceName())
				for _, id := range d.GetDeviceIds() {
					addr, err := resolveDeviceID(inv, id, gpu)
					if err != nil {
						problems["resource "+d.GetResourceName()] = err
						continue
					}
					claims.add(addr, o)
				}
			}
		}
	}
	return claims, problems
}

func (k *kubernetesSource) isGPUResource(name string) bool {
	if strings.HasPrefix(name, "nvidia.com/mig-") {
		return true
	}
	for _, r := range k.cfg.GPUResources {
		if r == name {
			return true
		}
	}
	return false
}

// errNoDevice marks device ids that name no GPU or RDMA device of the node, which is no fault:
// the RDMA shared device plugin's synthetic slots (k8s-rdma-shared-dev-plugin: rdmaHcaMax ids per
// HCA, every pod gets the whole HCA, so no per-pod owner), an SR-IOV VF without RDMA, another
// kind of device. Said once at info; the bytes stay with the rules.
var errNoDevice = errors.New("names no GPU or RDMA device of this node")

// resolveDeviceID maps a device plugin's id to a PCI address of the inventory. GPU ids, as the
// NVIDIA device plugin (and GKE's) hands them out, with dcgm-exporter's kubernetes.go as the
// record of what appears in the field:
//
//   - GPU-<uuid> (device-id-strategy=uuid, the default), <id>::<n> for time-slicing replicas
//     (the suffix stripped, every replica is the same GPU), GKE's nvidia<minor>[/vgpu<n>];
//   - <index> (device-id-strategy=index), the NVML index;
//   - MIG-GPU-<uuid>/<gi>/<ci> (drivers before R470 embed the parent's UUID) and GKE's
//     nvidia<minor>/gi<n>: the parent GPU. A MIG-<uuid> of a newer driver names its parent only
//     through NVML (nvmlDeviceGetDeviceHandleFromMigDeviceHandle), which this source does not
//     load: those are reported as unresolved.
//
// Any id that is a PCI address is the function itself: SR-IOV VFs from the SR-IOV network device
// plugin (the resource's ids are the VFs' PCI addresses), whole PFs, GPUs passed through by
// address. An id of another resource that is not a PCI address is errNoDevice.
func resolveDeviceID(inv *Inventory, id string, gpuResource bool) (string, error) {
	if a := pci.NormaliseAddress(id); pci.IsAddress(a) {
		if g := inv.gpuBy(func(g *GPU) bool { return g.Address == a }); g != nil {
			return g.Address, nil
		}
		if r := inv.rdmaBy(func(r *RDMA) bool { return r.Address == a }); r != nil {
			return r.Address, nil
		}
		return "", fmt.Errorf("device id %q: %w (a VF without RDMA, or a device of another kind)", id, errNoDevice)
	}
	if !gpuResource {
		return "", fmt.Errorf("device id %q: %w (the RDMA shared device plugin's slots and other synthetic ids give no per-pod owner)", id, errNoDevice)
	}
	base, _, _ := strings.Cut(id, "::")
	base, _, _ = strings.Cut(base, "/vgpu")
	var g *GPU
	switch {
	case strings.HasPrefix(base, "GPU-"):
		g = inv.gpuBy(func(g *GPU) bool { return strings.EqualFold(g.UUID, base) })
	case strings.HasPrefix(base, "MIG-GPU-"):
		parent, _, _ := strings.Cut(strings.TrimPrefix(base, "MIG-"), "/")
		g = inv.gpuBy(func(g *GPU) bool { return strings.EqualFold(g.UUID, parent) })
	case strings.HasPrefix(base, "MIG-"):
		return "", fmt.Errorf("device id %q: a MIG device's parent GPU is known only to NVML; its bytes stay unattributed", id)
	case strings.HasPrefix(base, "nvidia"):
		minorText, _, _ := strings.Cut(strings.TrimPrefix(base, "nvidia"), "/gi")
		minor, err := strconv.Atoi(minorText)
		if err != nil {
			return "", fmt.Errorf("device id %q: not nvidia<minor>", id)
		}
		g = inv.gpuBy(func(g *GPU) bool { return g.Minor == minor })
	default:
		index, err := strconv.Atoi(base)
		if err != nil {
			return "", fmt.Errorf("device id %q: neither a GPU UUID, a MIG id, nvidia<minor>, an index nor a PCI address", id)
		}
		g = inv.gpuBy(func(g *GPU) bool { return g.Index == index })
	}
	if g == nil {
		return "", fmt.Errorf("device id %q: no such GPU on this node", id)
	}
	return g.Address, nil
}

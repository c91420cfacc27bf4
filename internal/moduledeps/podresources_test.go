package moduledeps_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// heavyKubernetes are the Kubernetes packages the owner resolver must not compile in: the
// pod-resources API (k8s.io/kubelet/pkg/apis/podresources/v1) is generated gRPC code that needs
// only grpc and protobuf, while its module's other packages pull the API types, apimachinery and
// client-go (tens of megabytes of binary).
var heavyKubernetes = []string{
	"k8s.io/api/",
	"k8s.io/apimachinery/",
	"k8s.io/client-go/",
	"k8s.io/component-base/",
	"k8s.io/klog/",
}

func TestComponentsCompileOnlyThePodResourcesAPI(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./...")
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(cmd.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var kubelet bool
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "k8s.io/kubelet/pkg/apis/podresources/v1" {
			kubelet = true
		}
		for _, heavy := range heavyKubernetes {
			if strings.HasPrefix(pkg+"/", heavy) {
				t.Errorf("the components compile %s; only the pod-resources API (k8s.io/kubelet/pkg/apis/podresources/v1) is allowed", pkg)
			}
		}
	}
	if !kubelet {
		t.Fatal("k8s.io/kubelet/pkg/apis/podresources/v1 is not among the dependencies: this test checks nothing")
	}
}

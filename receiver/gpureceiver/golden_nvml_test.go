//go:build linux && cgo

package gpureceiver

import (
	"fmt"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// TestGoldenNVML: the NVML source over go-nvml's dgxh100 mock (nvml_test.go), two scrapes.
func TestGoldenNVML(t *testing.T) {
	var node *nvmlNode
	runGolden(t, goldenScenario{name: "nvml_dgxh100", scrapes: 2,
		before: func(scrape int) { node.pcieTx, node.nvlinkRxKiB = 1000+500*uint64(scrape), 4+2*uint64(scrape) },
		setup: func(t *testing.T) *gpuScraper {
			node = newNVMLNode()
			// The mock draws its UUIDs at random: fixed ones, in its format.
			for i, d := range node.Devices {
				uuid := fmt.Sprintf("GPU-%08x-0000-0000-0000-000000000000", i)
				d.(*server.Device).GetUUIDFunc = func() (string, nvml.Return) { return uuid, nvml.SUCCESS }
			}
			s, clock := newNVMLScraper(t, node)
			s.now = func() time.Time { return clock.t }
			return s
		}}, *update)
}

package pci

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
)

// Access Control Services (PCIe Base Specification, "ACS Extended Capability"; register layout as
// in include/uapi/linux/pci_regs.h).
const (
	extCapStart  = 0x100  // extended capabilities start after the 256-byte legacy space
	extCapIDACS  = 0x000d // PCI_EXT_CAP_ID_ACS
	acsCtrl      = 0x06   // PCI_ACS_CTRL, 16 bits
	acsP2PReqRR  = 0x0004 // PCI_ACS_RR: P2P Request Redirect
	acsP2PCplCR  = 0x0008 // PCI_ACS_CR: P2P Completion Redirect
	acsP2PEgress = 0x0020 // PCI_ACS_EC: P2P Egress Control
	maxExtCapHop = 96     // (4096-256)/40: more hops than capabilities means a loop
)

// ACS says whether a bridge redirects peer-to-peer requests upstream. With P2P Request or
// Completion Redirect (or Egress Control) on a switch port, GPU-to-NIC traffic that could turn inside the switch is
// sent up to the root complex instead, which breaks or slows GPUDirect RDMA.
type ACS int8

const (
	// ACSUnknown: the extended configuration space could not be read. Unprivileged readers get
	// only the first 64 bytes of `config` (pci_read_config in drivers/pci/pci-sysfs.c needs
	// CAP_SYS_ADMIN for the rest).
	ACSUnknown ACS = -1
	// ACSNoRedirect: no ACS capability, or redirect disabled.
	ACSNoRedirect ACS = 0
	// ACSRedirect: P2P request or completion redirect, or egress control, enabled.
	ACSRedirect ACS = 1
)

// ReadACS reads the function's config space and reports its ACS redirect state.
func ReadACS(dir string) ACS {
	b, err := os.ReadFile(filepath.Join(dir, "config"))
	if err != nil {
		return ACSUnknown
	}
	return parseACS(b)
}

var errNoACS = errors.New("no ACS capability")

func parseACS(cfg []byte) ACS {
	ctrl, err := acsControl(cfg)
	switch {
	case errors.Is(err, errNoACS):
		return ACSNoRedirect
	case err != nil:
		return ACSUnknown
	case ctrl&(acsP2PReqRR|acsP2PCplCR|acsP2PEgress) != 0:
		// The kernel's own P2P check counts Egress Control as redirect too: p2pdma.c
		// pci_bridge_has_acs_redir tests PCI_ACS_RR | PCI_ACS_CR | PCI_ACS_EC.
		return ACSRedirect
	}
	return ACSNoRedirect
}

var errShortConfig = errors.New("extended config space not readable")

// acsControl walks the extended capability list (header: ID in bits 0-15, version 16-19, next
// offset 20-31) to the ACS capability and returns its control register.
func acsControl(cfg []byte) (uint16, error) {
	if len(cfg) < extCapStart+4 {
		return 0, errShortConfig
	}
	off := extCapStart
	for range maxExtCapHop {
		if off < extCapStart || off+8 > len(cfg) {
			return 0, errNoACS
		}
		hdr := binary.LittleEndian.Uint32(cfg[off:])
		if hdr == 0 || hdr == 0xffffffff {
			return 0, errNoACS
		}
		if hdr&0xffff == extCapIDACS {
			return binary.LittleEndian.Uint16(cfg[off+acsCtrl:]), nil
		}
		off = int(hdr>>20) &^ 3
		if off == 0 {
			return 0, errNoACS
		}
	}
	return 0, errNoACS
}

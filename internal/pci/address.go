package pci

import "strings"

// NormaliseAddress turns DCGM's and NVML's "00000000:3B:00.0" (a 32-bit domain, upper case) into the
// kernel's "0000:3b:00.0" (pci_name(): %04x:%02x:%02x.%d), so that a GPU named by its
// library joins what sysfs and the other receivers call it. Returns "" for anything that is not a PCI address.
func NormaliseAddress(s string) string {
	s = strings.ToLower(strings.TrimSpace(strings.TrimRight(s, "\x00")))
	domain, rest, ok := strings.Cut(s, ":")
	if !ok || len(rest) != len("3b:00.0") || rest[2] != ':' || rest[5] != '.' {
		return ""
	}
	if len(domain) > 4 {
		// A domain wider than 16 bits only ever has leading zeros on Linux PCI; the kernel prints
		// at least four digits.
		trimmed := strings.TrimLeft(domain[:len(domain)-4], "0")
		domain = trimmed + domain[len(domain)-4:]
	}
	if len(domain) < 4 {
		domain = strings.Repeat("0", 4-len(domain)) + domain
	}
	for _, c := range domain + rest[:2] + rest[3:5] + rest[6:] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return ""
		}
	}
	return domain + ":" + rest
}

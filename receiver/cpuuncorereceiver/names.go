package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/perf"
)

// This file names PMUs, dies and devices in series and log lines.

// dieName names the die whose box CPU is p.CPUs[die]: "socket1" where the socket has one die,
// "socket1/die3" where it has several (the uncore driver has one box per die,
// uncore_max_dies()), "die3" where the socket is unknown.
func (d *discovery) dieName(p *perf.PMU, die int, place cpuPlace) string {
	if place.socket < 0 {
		return fmt.Sprintf("die%d", die)
	}
	n := 0
	for _, c := range p.CPUs {
		if d.place(c).socket == place.socket {
			n++
		}
	}
	if n > 1 {
		return fmt.Sprintf("socket%d/die%d", place.socket, die)
	}
	return fmt.Sprintf("socket%d", place.socket)
}

// deviceBase is the short name of a PMU type in device names.
func deviceBase(pmu string) string {
	base := pmu
	if i := strings.LastIndexByte(pmu, '_'); i > 0 {
		if _, err := strconv.Atoi(pmu[i+1:]); err == nil {
			base = pmu[:i]
		}
	}
	switch base {
	case "uncore_imc":
		return "imc"
	case "amd_umc":
		return "umc"
	case "uncore_iio_free_running", "uncore_iio":
		return "iio"
	case "uncore_type_6": // the GNR IMC under its generic discovery name (events.go gnrIMC)
		return "imc"
	case "amd_df":
		return "df"
	}
	return strings.TrimPrefix(strings.TrimPrefix(base, "uncore_"), "amd_")
}

// pmuFamily names all instances of a PMU in one-time messages (uncore_imc_3 -> uncore_imc_*), so
// that a fact true of every instance is said once.
func pmuFamily(pmu string) string {
	if i := strings.LastIndexByte(pmu, '_'); i > 0 {
		if _, err := strconv.Atoi(pmu[i+1:]); err == nil {
			return pmu[:i] + "_*"
		}
	}
	return pmu
}

// instance is the PMU's instance number (uncore_imc_3 -> 3; uncore_imc -> 0).
func instance(pmu string) int {
	if i := strings.LastIndexByte(pmu, '_'); i > 0 {
		if n, err := strconv.Atoi(pmu[i+1:]); err == nil {
			return n
		}
	}
	return 0
}

// abbreviate lists the first n names and how many more there are.
func abbreviate(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

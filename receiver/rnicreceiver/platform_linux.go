package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/scraper"
	"golang.org/x/sys/unix"
)

// newMetricsScraper returns the receiver's scraper.
func newMetricsScraper(cfg *Config, set receiver.Settings) (scraper.Metrics, error) {
	s := newScraper(cfg, set)
	return scraper.NewMetrics(s.scrape, scraper.WithStart(s.start), scraper.WithShutdown(s.shutdown))
}

// maxKeptFiles caps the descriptors kept open between scrapes (sysfs.Reader.SetMaxKept): a
// quarter of the process's descriptor limit, and at most 8192; past it the files are read with
// open-read-close.
func maxKeptFiles() int {
	const most = 8192
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == unix.RLIM_INFINITY {
		return most
	}
	return int(min(lim.Cur/4, most))
}

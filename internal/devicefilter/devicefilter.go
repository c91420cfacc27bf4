// Package devicefilter is the device filter of the rnic and gpu receivers, in the shape of
// contrib's hostmetrics network scraper (include/exclude, each a list and a match_type):
//
//	include:
//	  devices: [mlx5_0, mlx5_1]
//	  match_type: strict
//	exclude:
//	  devices: ["mlx5_.*/2"]
//	  match_type: regexp
//
// A device is read when it matches include (or include is empty) and does not match exclude.
// Besides contrib's strict and regexp, match_type glob takes shell patterns (mlx5_*), the way
// device names are usually written; it is the default (Default) where a configuration gives
// devices without a match_type.
package devicefilter // import "github.com/otelcol-iclens/otelcol-iclens/internal/devicefilter"

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
)

// MatchType says how Devices are compared with a name.
type MatchType string

const (
	Strict MatchType = "strict"
	Regexp MatchType = "regexp"
	Glob   MatchType = "glob"
)

// Match is one side of the filter: the names or patterns, and how to match them.
type Match struct {
	Devices   []string  `mapstructure:"devices"`
	MatchType MatchType `mapstructure:"match_type"`

	// compiled by Filter.Validate for regexp
	res []*regexp.Regexp
}

// Filter is the include/exclude pair a receiver's configuration squashes in.
type Filter struct {
	// Include, when it lists devices, keeps only the devices that match.
	Include Match `mapstructure:"include"`
	// Exclude drops the devices that match; it wins over Include. Excluded devices are never read.
	Exclude Match `mapstructure:"exclude"`
}

// Default is the filter a receiver's default configuration holds: nothing filtered, and glob
// matching for devices given without a match_type.
func Default() Filter {
	return Filter{Include: Match{MatchType: Glob}, Exclude: Match{MatchType: Glob}}
}

// Validate checks both sides, with messages that name the field (include.match_type: ...), and
// compiles the regular expressions once, so that Selects does not.
func (f *Filter) Validate() error {
	return errors.Join(f.Include.validate("include"), f.Exclude.validate("exclude"))
}

func (m *Match) validate(key string) error {
	if len(m.Devices) == 0 {
		return nil
	}
	var errs []error
	m.res = nil
	switch m.MatchType {
	case Strict:
	case Glob:
		for _, p := range m.Devices {
			if _, err := path.Match(p, ""); err != nil {
				errs = append(errs, fmt.Errorf("%s.devices: bad shell pattern, got %q: %w", key, p, err))
			}
		}
	case Regexp:
		for _, p := range m.Devices {
			re, err := regexp.Compile("^(?:" + p + ")$")
			if err != nil {
				errs = append(errs, fmt.Errorf("%s.devices: bad regular expression, got %q: %w", key, p, err))
				continue
			}
			m.res = append(m.res, re)
		}
	default:
		errs = append(errs, fmt.Errorf("%s.match_type: must be one of strict, regexp, glob, got %q", key, m.MatchType))
	}
	return errors.Join(errs...)
}

// matches reports whether any of names matches one of the devices.
func (m *Match) matches(names []string) bool {
	for _, n := range names {
		switch m.MatchType {
		case Strict:
			if slices.Contains(m.Devices, n) {
				return true
			}
		case Glob:
			for _, p := range m.Devices {
				if ok, _ := path.Match(p, n); ok {
					return true
				}
			}
		case Regexp:
			if m.res == nil {
				// Validate was not called (a Config built in code); compile once now.
				_ = m.validate("")
			}
			for _, re := range m.res {
				if re.MatchString(n) {
					return true
				}
			}
		}
	}
	return false
}

// Selects reports whether the device known by any of names (a device, and device/port for a port)
// is to be read.
func (f *Filter) Selects(names ...string) bool {
	if len(f.Include.Devices) > 0 && !f.Include.matches(names) {
		return false
	}
	return len(f.Exclude.Devices) == 0 || !f.Exclude.matches(names)
}

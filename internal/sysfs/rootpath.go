package sysfs

import (
	"fmt"
	"path/filepath"
)

// HostRoot returns a receiver's root_path with its default: the host's filesystem root, under
// which sys/ and proc/ are read ("/", or where a container mounts the host's root).
func HostRoot(rootPath string) string {
	if rootPath == "" {
		return "/"
	}
	return rootPath
}

// ValidateRootPath checks a receiver's root_path the way contrib's hostmetrics does
// (internal/gopsutilenv ValidateRootPath): empty means "/", anything else must be an absolute
// path. Whether it exists is for Start to find out: a container may mount it later.
func ValidateRootPath(rootPath string) error {
	if rootPath != "" && !filepath.IsAbs(rootPath) {
		return fmt.Errorf("root_path: must be an absolute path, got %q", rootPath)
	}
	return nil
}

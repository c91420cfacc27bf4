// Package filestorageextension is contrib's file_storage extension (extension/storage/filestorage
// v0.165.1, its configuration unchanged) with one addition: before it hands out a client it reads
// every bbolt file it owns, read-only, and moves a damaged one aside. Contrib's extension opens
// each file with bbolt.Open on the first GetClient (client.go newClient): a file truncated by a
// full disk or a crash makes bbolt's freelist rebuild (bbolt v1.5.0 db.go freepages, run in a
// goroutine of its own when NoFreelistSync is set, as file_storage sets it) panic, which nothing
// can recover, and a file overwritten at random fails Open with "invalid database" (bbolt
// errors.ErrInvalid) and no file name. Either way the exporter's Start fails, and the collector
// with it, at every start. Its `recreate` option recovers panics of the calling goroutine only.
//
//go:generate mdatagen metadata.yaml
package filestorageextension // import "github.com/otelcol-iclens/otelcol-iclens/extension/filestorageextension"

package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"errors"
	"fmt"
	"time"
)

// dcgmValue is one DCGM field value in plain Go types: the part of go-dcgm's FieldValue_v2
// (pkg/dcgm/const.go) the receiver needs, copied out of the 4 KiB C union so that the scrape
// logic can be tested without cgo.
type dcgmValue struct {
	// gpu is the entity id: a GPU id, for entity dcgmFEGPUI / dcgmFEGPUCI a MIG instance's, for
	// dcgmFELink a packed dcgm_link_t (dcgmLink.raw).
	gpu uint
	// entity is the entity group (dcgm_field_entity_group_t); 0 or dcgmFEGPU for a GPU.
	entity    int
	field     uint16
	fieldType byte // 'i', 'd', 's' (DCGM_FT_*)
	status    int  // per-value dcgmReturn_t
	ts        int64
	i         int64
	f         float64
	s         string
}

// dcgmError is a DCGM failure with its dcgmReturn_t code where go-dcgm kept one (0 where it did not).
type dcgmError struct {
	op   string
	code int
	msg  string
}

func (e *dcgmError) Error() string {
	if e.code != 0 {
		return fmt.Sprintf("%s: %s (%s)", e.op, e.msg, dcgmStatusReason(e.code))
	}
	return e.op + ": " + e.msg
}

func dcgmErrorCode(err error) int {
	var de *dcgmError
	if errors.As(err, &de) {
		return de.code
	}
	return 0
}

// dcgmWatchID names a watch (a GPU group and a field group watched together).
type dcgmWatchID int

// dcgmAPI is the part of go-dcgm the receiver calls, in plain Go types. dcgm_cgo.go implements it
// over go-dcgm (and so over libdcgm.so.4); tests implement it in Go. Every method but connect must
// only be called after connect succeeded: go-dcgm resolves libdcgm's symbols lazily, and a call
// after a failed Init kills the process with a symbol lookup error.
type dcgmAPI interface {
	// connect loads libdcgm.so.4 and connects (dcgm.Init).
	connect(cfg DCGMConfig) error
	// supportedGPUs lists the GPU ids DCGM supports (dcgmGetAllSupportedDevices).
	supportedGPUs() ([]uint, error)
	// latestValues reads the newest value of each field of each GPU (dcgmEntitiesGetLatestValues);
	// live asks DCGM to read the driver instead of its cache, for fields that are not watched.
	latestValues(gpus []uint, fields []uint16, live bool) ([]dcgmValue, error)
	// profilingFields lists the profiling fields the GPU supports (dcgmProfGetSupportedMetricGroups)
	// and, for each, its metric group as majorId<<16 | minorId.
	profilingFields(gpu uint) ([]uint16, map[uint16]uint32, error)
	// watch creates a group of the GPUs and a field group and watches them
	// (dcgmGroupCreate, dcgmGroupAddDevice, dcgmFieldGroupCreate, dcgmWatchFields, dcgmUpdateAllFields).
	watch(name string, gpus []uint, fields []uint16, updateEvery time.Duration, keepAge time.Duration, keepSamples int32) (dcgmWatchID, error)
	// valuesSince returns every sample of the watch newer than sinceUs and the timestamp to ask
	// from next time (dcgmGetValuesSince_v2).
	valuesSince(w dcgmWatchID, sinceUs int64) ([]dcgmValue, int64, error)
	// migEntities lists the MIG GPU and compute instances with the GPU each belongs to
	// (dcgmGetGpuInstanceHierarchy).
	migEntities() ([]dcgmEntity, error)
	// watchMIG watches fields on MIG instances (dcgmGroupCreate, dcgmGroupAddEntity, then as watch).
	watchMIG(name string, entities []dcgmEntity, fields []uint16, updateEvery, keepAge time.Duration) (dcgmWatchID, error)
	// nvlinkLinks lists, per GPU id, the NVLink links DCGM knows the GPU to have: those whose
	// state is not DcgmNvLinkLinkStateNotSupported (dcgmGetNvLinkLinkStatus).
	nvlinkLinks() (map[uint][]uint16, error)
	// watchLinks watches fields on NVLink links as DCGM_FE_LINK entities (dcgmGroupCreate,
	// dcgmGroupAddEntity of each link's dcgm_link_t, then as watch).
	watchLinks(name string, links []dcgmLink, fields []uint16, updateEvery, keepAge time.Duration) (dcgmWatchID, error)
	// unwatch stops the watch and destroys its groups.
	unwatch(w dcgmWatchID) error
	// disconnect undoes connect (dcgm.Shutdown).
	disconnect() error
}

// dcgmEntity is a MIG instance: its entity group and id, and the DCGM id of its GPU.
type dcgmEntity struct {
	group int
	id    uint
	gpu   uint
}

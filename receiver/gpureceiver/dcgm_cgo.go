//go:build linux && cgo

package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/NVIDIA/go-dcgm/pkg/dcgm"
)

// goDCGM implements dcgmAPI over go-dcgm v1.4611.0, which dlopens libdcgm.so.4 at Init and binds
// every other libdcgm symbol lazily on its first call (go-dcgm pkg/dcgm/admin.go: dlopen with
// RTLD_LAZY; its cgo calls are unresolved symbols bound by the loader). connected guards
// every call: after a failed Init the first call to a libdcgm function kills the process
// ("symbol lookup error"), and Go cannot recover from that.
type goDCGM struct {
	connected bool
	watches   map[dcgmWatchID]goDCGMWatch
	next      dcgmWatchID
}

type goDCGMWatch struct {
	group  dcgm.GroupHandle
	fields dcgm.FieldHandle
}

func newDCGMAPI() (dcgmAPI, error) {
	return &goDCGM{watches: map[dcgmWatchID]goDCGMWatch{}}, nil
}

var errNotConnected = errors.New("DCGM is not connected")

func (d *goDCGM) connect(cfg DCGMConfig) error {
	if d.connected {
		return nil
	}
	var err error
	if cfg.Mode == modeEmbedded {
		_, err = dcgm.Init(dcgm.Embedded)
	} else {
		addr, socket, aerr := cfg.initArgs()
		if aerr != nil {
			return aerr
		}
		if socket == "" { // a DCGM 4.5+ connection string
			_, err = dcgm.Init(dcgm.Standalone, addr)
		} else {
			_, err = dcgm.Init(dcgm.Standalone, addr, socket)
		}
	}
	if err != nil {
		return fromDCGM("connecting", err)
	}
	d.connected = true
	return nil
}

func (d *goDCGM) disconnect() error {
	if !d.connected {
		return nil
	}
	d.connected = false
	clear(d.watches)
	return fromDCGM("shutting down", dcgm.Shutdown())
}

func (d *goDCGM) supportedGPUs() ([]uint, error) {
	if !d.connected {
		return nil, errNotConnected
	}
	ids, err := dcgm.GetSupportedDevices()
	return ids, fromDCGM("listing GPUs", err)
}

func (d *goDCGM) profilingFields(gpu uint) ([]uint16, map[uint16]uint32, error) {
	if !d.connected {
		return nil, nil, errNotConnected
	}
	groups, err := dcgm.GetSupportedMetricGroups(gpu)
	if err != nil {
		return nil, nil, fromDCGM("listing profiling metrics", err)
	}
	var fields []uint16
	ofField := map[uint16]uint32{}
	for _, g := range groups {
		for _, f := range g.FieldIds {
			fields = append(fields, uint16(f))
			ofField[uint16(f)] = uint32(g.Major)<<16 | uint32(g.Minor)&0xffff
		}
	}
	return fields, ofField, nil
}

// dcgmFlagLiveData is DCGM_FV_FLAG_LIVE_DATA (dcgm_structs.h): read the driver, not the cache.
const dcgmFlagLiveData = 1

func (d *goDCGM) latestValues(gpus []uint, fields []uint16, live bool) ([]dcgmValue, error) {
	if !d.connected {
		return nil, errNotConnected
	}
	entities := make([]dcgm.GroupEntityPair, len(gpus))
	for i, g := range gpus {
		entities[i] = dcgm.GroupEntityPair{EntityGroupId: dcgm.FE_GPU, EntityId: g}
	}
	var flags uint
	if live {
		flags = dcgmFlagLiveData
	}
	vals, err := dcgm.EntitiesGetLatestValues(entities, toShorts(fields), flags)
	if err != nil {
		return nil, fromDCGM("reading latest values", err)
	}
	return convertFieldValues(vals), nil
}

// watchSeq makes group names unique in the hostengine, which other clients share.
var watchSeq atomic.Uint64

func (d *goDCGM) watch(name string, gpus []uint, fields []uint16, every, keepAge time.Duration, keepSamples int32) (id dcgmWatchID, err error) {
	if !d.connected {
		return 0, errNotConnected
	}
	name = fmt.Sprintf("%s-%d-%d", name, os.Getpid(), watchSeq.Add(1))
	group, err := dcgm.CreateGroup(name)
	if err != nil {
		return 0, fromDCGM("creating a GPU group", err)
	}
	defer func() {
		if err != nil {
			_ = dcgm.DestroyGroup(group)
		}
	}()
	for _, g := range gpus {
		if err = dcgm.AddToGroup(group, g); err != nil {
			return 0, fromDCGM("adding a GPU to the group", err)
		}
	}
	fg, err := dcgm.FieldGroupCreate(name, toShorts(fields))
	if err != nil {
		return 0, fromDCGM("creating a field group", err)
	}
	if err = dcgm.WatchFieldsWithGroupEx(fg, group, every.Microseconds(), keepAge.Seconds(), keepSamples); err != nil {
		_ = dcgm.FieldGroupDestroy(fg)
		return 0, fromDCGM("watching fields", err)
	}
	d.next++
	d.watches[d.next] = goDCGMWatch{group: group, fields: fg}
	return d.next, nil
}

func (d *goDCGM) migEntities() ([]dcgmEntity, error) {
	if !d.connected {
		return nil, errNotConnected
	}
	h, err := dcgm.GetGPUInstanceHierarchy()
	if err != nil {
		return nil, fromDCGM("listing MIG instances", err)
	}
	// A compute instance's parent is its GPU instance, whose parent is the GPU.
	gpuOf := map[uint]uint{}
	for i := uint(0); i < h.Count && i < uint(len(h.EntityList)); i++ {
		e := h.EntityList[i]
		if e.Entity.EntityGroupId == dcgm.FE_GPU_I && e.Parent.EntityGroupId == dcgm.FE_GPU {
			gpuOf[e.Entity.EntityId] = e.Parent.EntityId
		}
	}
	var out []dcgmEntity
	for i := uint(0); i < h.Count && i < uint(len(h.EntityList)); i++ {
		e := h.EntityList[i]
		switch e.Entity.EntityGroupId {
		case dcgm.FE_GPU_I:
			out = append(out, dcgmEntity{group: dcgmFEGPUI, id: e.Entity.EntityId, gpu: e.Parent.EntityId})
		case dcgm.FE_GPU_CI:
			if g, ok := gpuOf[e.Parent.EntityId]; ok {
				out = append(out, dcgmEntity{group: dcgmFEGPUCI, id: e.Entity.EntityId, gpu: g})
			}
		}
	}
	return out, nil
}

func (d *goDCGM) watchMIG(name string, entities []dcgmEntity, fields []uint16, every, keepAge time.Duration) (dcgmWatchID, error) {
	return d.watchEntities(name, "a MIG instance", func(group dcgm.GroupHandle) error {
		for _, e := range entities {
			if err := dcgm.AddEntityToGroup(group, dcgm.Field_Entity_Group(e.group), e.id); err != nil {
				return err
			}
		}
		return nil
	}, fields, every, keepAge)
}

// nvlinkLinks reads dcgmGetNvLinkLinkStatus (dcgmNvLinkStatus_v5: per GPU a state for each of
// DCGM_NVLINK_MAX_LINKS_PER_GPU link indices, dcgm_structs.h). go-dcgm answers nil, nil where
// DCGM answers DCGM_ST_NOT_SUPPORTED (pkg/dcgm/topology.go 235-238): no links.
func (d *goDCGM) nvlinkLinks() (map[uint][]uint16, error) {
	if !d.connected {
		return nil, errNotConnected
	}
	status, err := dcgm.GetNvLinkLinkStatus()
	if err != nil {
		return nil, fromDCGM("listing NVLink links", err)
	}
	out := map[uint][]uint16{}
	for _, l := range status {
		if l.ParentType == dcgm.FE_GPU && l.State != dcgm.LS_NOT_SUPPORTED {
			out[l.ParentId] = append(out[l.ParentId], uint16(l.Index))
		}
	}
	return out, nil
}

// watchLinks adds each link as go-dcgm packs a dcgm_link_t (AddLinkEntityToGroup: type DCGM_FE_GPU,
// the link index, the GPU id; pkg/dcgm/gpu_group.go 91-102), which dcgmLink.raw reads back.
func (d *goDCGM) watchLinks(name string, links []dcgmLink, fields []uint16, every, keepAge time.Duration) (dcgmWatchID, error) {
	return d.watchEntities(name, "an NVLink link", func(group dcgm.GroupHandle) error {
		for _, l := range links {
			if err := dcgm.AddLinkEntityToGroup(group, uint(l.index), dcgm.FE_GPU, l.gpu); err != nil {
				return err
			}
		}
		return nil
	}, fields, every, keepAge)
}

// watchEntities creates an entity group (filled by add), a field group, and watches them.
func (d *goDCGM) watchEntities(name, what string, add func(dcgm.GroupHandle) error, fields []uint16, every, keepAge time.Duration) (id dcgmWatchID, err error) {
	if !d.connected {
		return 0, errNotConnected
	}
	name = fmt.Sprintf("%s-%d-%d", name, os.Getpid(), watchSeq.Add(1))
	group, err := dcgm.CreateGroup(name)
	if err != nil {
		return 0, fromDCGM("creating an entity group", err)
	}
	defer func() {
		if err != nil {
			_ = dcgm.DestroyGroup(group)
		}
	}()
	if err = add(group); err != nil {
		return 0, fromDCGM("adding "+what+" to the group", err)
	}
	fg, err := dcgm.FieldGroupCreate(name, toShorts(fields))
	if err != nil {
		return 0, fromDCGM("creating a field group", err)
	}
	if err = dcgm.WatchFieldsWithGroupEx(fg, group, every.Microseconds(), keepAge.Seconds(), 0); err != nil {
		_ = dcgm.FieldGroupDestroy(fg)
		return 0, fromDCGM("watching fields", err)
	}
	d.next++
	d.watches[d.next] = goDCGMWatch{group: group, fields: fg}
	return d.next, nil
}

func (d *goDCGM) valuesSince(id dcgmWatchID, sinceUs int64) ([]dcgmValue, int64, error) {
	w, ok := d.watches[id]
	if !d.connected || !ok {
		return nil, 0, errNotConnected
	}
	vals, next, err := dcgm.GetValuesSince(w.group, w.fields, time.UnixMicro(sinceUs))
	if err != nil {
		return nil, 0, fromDCGM("reading samples", err)
	}
	return convertFieldValues(vals), next.UnixMicro(), nil
}

func (d *goDCGM) unwatch(id dcgmWatchID) error {
	w, ok := d.watches[id]
	if !d.connected || !ok {
		return errNotConnected
	}
	delete(d.watches, id)
	return errors.Join(
		fromDCGM("unwatching", dcgm.UnwatchFields(w.fields, w.group)),
		fromDCGM("destroying a field group", dcgm.FieldGroupDestroy(w.fields)),
		fromDCGM("destroying a GPU group", dcgm.DestroyGroup(w.group)),
	)
}

func toShorts(fields []uint16) []dcgm.Short {
	out := make([]dcgm.Short, len(fields))
	for i, f := range fields {
		out[i] = dcgm.Short(f)
	}
	return out
}

// convertFieldValues copies what the receiver needs out of go-dcgm's values (each carries a 4 KiB
// union) into plain Go values.
func convertFieldValues(vals []dcgm.FieldValue_v2) []dcgmValue {
	out := make([]dcgmValue, len(vals))
	for i := range vals {
		v := &vals[i]
		o := dcgmValue{
			gpu: v.EntityID, entity: int(v.EntityGroupId), field: uint16(v.FieldID), fieldType: byte(v.FieldType),
			status: v.Status, ts: v.TS,
		}
		switch v.FieldType {
		case dcgm.DCGM_FT_INT64:
			o.i = v.Int64()
		case dcgm.DCGM_FT_DOUBLE:
			o.f = v.Float64()
		case dcgm.DCGM_FT_STRING:
			if v.StringValue != nil {
				o.s = *v.StringValue
			} else {
				o.s = v.String()
			}
		}
		out[i] = o
	}
	return out
}

// fromDCGM keeps the dcgmReturn_t of go-dcgm's errors: *dcgm.Error carries it; GetValuesSince
// only prints it ("dcgmGetValuesSince_v2 failed with error code %d", pkg/dcgm/field_values.go).
func fromDCGM(op string, err error) error {
	if err == nil {
		return nil
	}
	var de *dcgm.Error
	if errors.As(err, &de) {
		return &dcgmError{op: op, code: int(de.Code), msg: de.Error()}
	}
	code := 0
	if i := strings.LastIndex(err.Error(), "error code "); i >= 0 {
		_, _ = fmt.Sscanf(err.Error()[i:], "error code %d", &code)
	}
	return &dcgmError{op: op, code: code, msg: err.Error()}
}

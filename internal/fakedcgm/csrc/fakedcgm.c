/*
 * A fake libdcgm.so.4 for the gpu receiver's tests: it lets go-dcgm's real cgo path (dlopen at
 * Init, lazily bound symbols, struct layouts, the GetValuesSince callback into Go) run on a
 * machine with no GPU and no DCGM.
 *
 * It is compiled against the DCGM headers shipped inside the go-dcgm module
 * (github.com/NVIDIA/go-dcgm@v1.4611.0/pkg/dcgm: dcgm_agent.h, dcgm_structs.h, dcgm_fields.h,
 * Apache-2.0), so the compiler checks every signature and struct it fills against the same
 * declarations go-dcgm uses. The functions the receiver calls are implemented here; every other
 * symbol go-dcgm references is in stubs.c and answers DCGM_ST_NOT_SUPPORTED, so that a stray call
 * fails cleanly instead of killing the process with a symbol lookup error.
 *
 * What it serves (scripted, deterministic; see fake_libdcgm_test.go for the expected numbers):
 *   GPUs: FAKE_DCGM_GPUS (default 2), ids 0..n-1, PCI bus 00000000:1B:00.0, 00000000:3B:00.0, ...
 *   History (dcgmGetValuesSince_v2), 10 samples 1 s apart from FAKE_BASE_US + 1 s:
 *     1009 PCIe TX (g+1)*1000 B/s; 1010 PCIe RX 2000 B/s, the first sample blank;
 *     1011/1012 NVLink TX/RX 1e9 B/s; 230 XID: one event (79) on GPU 0 at the 5th second.
 *   Latest values (dcgmEntitiesGetLatestValues): identity strings, 203 GPU util 42 %, 204 mem copy
 *     7 %, 1001 0.25, 1002 0.5 (GPU 1: DCGM_ST_NOT_SUPPORTED), 1005 0.125, 202 replays 3,
 *     235/236 max gen 5 / width 16, 237 gen 4, 238 width 16 (GPU 1: 8, a downgraded link),
 *     1201/1203 DCGM_INT64_NOT_SUPPORTED (no NVLink5), anything else blank.
 *   Profiling groups: {1001,1002,1005} and {1009,1010,1011,1012}.
 * Knobs: FAKE_DCGM_LIVE=1 (each GetValuesSince serves the ten seconds after its cursor, for
 *   benchmarks), FAKE_DCGM_CONNECT_FAIL=1 (dcgmConnect_v2 answers DCGM_ST_CONNECTION_NOT_VALID),
 *   FAKE_DCGM_NO_PROF=1 (profiling module not loaded), FAKE_DCGM_CALL_LOG=<file> (one line per
 *   call, with the arguments worth checking), FAKE_DCGM_SAMPLES=<n> (scripted samples per field,
 *   default 10: 8 GPUs x 4 fields x 4097 samples exceed go-dcgm's 131072-value cap,
 *   pkg/dcgm/field_values.go maxCallbackValues), FAKE_DCGM_DROP_AT=<n> (the n-th
 *   dcgmGetValuesSince_v2 answers DCGM_ST_CONNECTION_NOT_VALID: the hostengine went away, as
 *   DcgmClientHandler.cpp reports it; the next connect works), FAKE_DCGM_LATE=1 (PCIe TX has no
 *   samples at seconds 6-8: the sample at 9 is late and averages the whole 4 s gap, as a GPM value
 *   covers the span back to its baseline, DcgmGpmManager.cpp 272-307).
 *
 * MIG, FAKE_DCGM_MIG=1: GPU 0 has GPU instance 0 and, in it, compute instance 0
 *   (dcgmGetGpuInstanceHierarchy: entity GPU_I 0 with parent GPU 0, GPU_CI 0 with parent GPU_I 0);
 *   an XID (43) raised inside the compute instance at the 7th second is stored on the GPU_CI
 *   entity only, as DcgmCacheManager.cpp RecordXidForComputeInstance does. Without the knob the
 *   hierarchy is empty (a GPU without MIG).
 *
 * DCGM 4.6 Hopper mode, FAKE_DCGM_HOPPER=1: a hostengine on GPM GPUs (H100/H200/B200).
 *   - dcgmProfGetSupportedMetricGroups lists three fixed ranges on every GPU whatever the driver
 *     supports (DCGM 4.6 modules/core/DcgmModuleCore.cpp ProcessProfGetMetricGroups 2246-2293):
 *     1001-1034, 1040-1083 (NVLink, C2C), 1084-1096 (cumulative counters, 1091/1092 PCIe totals).
 *   - GPM values are blank until two GPM samples exist (testing/python3/tests/test_prof.py
 *     1328-1337): the first 1009/1010 sample is blank, and 1091/1092 are blank for the first two
 *     latest reads.
 *   - FAKE_DCGM_GPM_PCIE=0 (default): the driver's NVML lacks NVML_GPM_METRIC_PCIE_TX/RX, so
 *     1091/1092 stay DCGM_INT64_BLANK forever (DcgmGpmManager.cpp 307-314: the NVML error leaves
 *     DCGM_FP64_BLANK). FAKE_DCGM_GPM_PCIE=1: from the third read they hold a since-boot total
 *     (5e12 / 7e12 bytes at start) growing at the rates below.
 *   - 285 C2C_LINK_QUANTITY is 0: an H100 SXM without C2C link, though C2C is listed.
 *     FAKE_DCGM_GH200=1: GPU 0 is a GH200's Hopper, 285 is 1 and its C2C rates 1076/1078 (TX/RX
 *     all bytes) run at 1000 / 2000 B/s, where its host copies go.
 *   - The per-link NVLink rates 1040-1075 (DCGM_FI_PROF_NVLINK_L<n>_TX/RX_BYTES): 18 links, links
 *     0-15 at 62.5 MB/s each way (summing to the aggregate 1011/1012), links 16 and 17 at 0.
 *     FAKE_DCGM_LINKS_SHORT=1: links 0-15 at 50 MB/s, their sum 20 % below the aggregate (what
 *     the device check's gpu_nvlink_per_link must catch).
 *   - FAKE_DCGM_REALTIME=1: history follows the wall clock, one sample a second from the first
 *     connect to now, PCIe TX (g+1)*1000 B/s and RX 2000 B/s, so that a running collector sees
 *     bytes grow at those rates.
 *
 * DCGM 4.6 Blackwell mode, FAKE_DCGM_BLACKWELL=1: every GPU an NVLink5 B200, on the Hopper mode's
 *   GPM behaviour (it implies FAKE_DCGM_HOPPER) with DCGM 4.6's per-link FE_LINK fields:
 *   - the NVLink metric group also lists DCGM_FI_PROF_NVLINK_TX/RX_BYTES_PER_LINK 1532/1533, as
 *     DCGM 4.6 does on every GPM GPU (DcgmModuleCore.cpp 2275-2278; the Hopper mode leaves them out);
 *   - the per-link fields 1040-1075 answer DCGM_INT64_BLANK at every sample (a GPM field whose NVML
 *     metric the driver lacks stays blank, DcgmGpmManager.cpp 307-314);
 *   - dcgmGetNvLinkLinkStatus names links 0-17 of every GPU Up and the rest of its
 *     DCGM_NVLINK_MAX_LINKS_PER_GPU NotSupported (in every mode: the fake GPUs have 18 links);
 *   - dcgmGroupAddEntity takes DCGM_FE_LINK entities, dcgm_link_t {type DCGM_FE_GPU, index, gpuId}
 *     (dcgm_structs.h 533-555), as DCGM's GetIsValidEntityId does (DcgmCacheManager.cpp 1881-1913),
 *     and dcgmGetValuesSince_v2 serves 1532/1533 on them, one sample a second like 1011/1012: links
 *     0-15 transmit 62.5 MB/s + (2l - 15) MB/s and receive 62.5 MB/s - (2l - 15) MB/s, so that each
 *     link differs and the 16 sum to the aggregate 1011/1012 (1e9 B/s) in both directions; links 16
 *     and 17 are idle. FAKE_DCGM_LINKS_SHORT=1 takes a fifth off every link, as in the Hopper mode.
 *   - dcgmEntitiesGetLatestValues on a link entity: 1532/1533 blank when read live (DCGM only takes
 *     GPM samples of watched entities, DcgmCacheManager.cpp 9476-9483), else the newest sample.
 *   - 1201/1203 stay DCGM_INT64_NOT_SUPPORTED, so that gpu_nvlink comes from 1011/1012, the same GPM
 *     source the links are compared with.
 *
 * Link health, FAKE_DCGM_NVLINK5=1: GPU 0 is a GB200's Blackwell GPU, GPU 1 an H100 (dcgm_fields.h,
 *   go-dcgm v1.4611.0, "NVLink5+ only ... Not supported on NVLink4 and earlier").
 *   - GPU 0: the NVLink5 error counters 1204-1214 and 1219 hold field id x 10 plus 5 per latest read
 *     (1204 reads 12045, 12050, ...), the BER ratios 1216 / 1218 are the doubles 2.5e-9 / 1e-15,
 *     and the C2C error counters 1400-1402 hold 7, 0 and 1 plus one per latest read for 1401.
 *   - GPU 1: every one of them is DCGM_INT64_NOT_SUPPORTED / DCGM_FP64_NOT_SUPPORTED.
 *   Without the knob they are blank, as on a hostengine that never watched them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "dcgm_agent.h"
#include "dcgm_fields.h"
#include "dcgm_structs.h"

#define FAKE_BASE_US 1700000000000000LL
#define FAKE_SAMPLES 10
#define MAX_GROUPS 64

static int initialized;
static int connected;
static long long startUs;      /* wall clock at the first connect (FAKE_DCGM_REALTIME) */
static int sinceCalls;         /* dcgmGetValuesSince_v2 calls (FAKE_DCGM_DROP_AT) */
static int gpmReads[DCGM_MAX_NUM_DEVICES]; /* cached reads of 1091/1092 per GPU (Hopper mode) */

static long long nowUs(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (long long)tv.tv_sec * 1000000LL + tv.tv_usec;
}

static struct {
    int used;
    /* members: entity ids with their entity groups (DCGM_FE_GPU, or a MIG instance) */
    unsigned int gpus[DCGM_MAX_NUM_DEVICES * 3];
    dcgm_field_entity_group_t egroup[DCGM_MAX_NUM_DEVICES * 3];
    int ngpus;
} groups[MAX_GROUPS];

static struct {
    int used;
    unsigned short fields[DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP];
    int nfields;
} fieldGroups[MAX_GROUPS];

static int envInt(const char *name, int def) {
    const char *v = getenv(name);
    return (v && *v) ? atoi(v) : def;
}

static void logCall(const char *fmt, ...) {
    const char *path = getenv("FAKE_DCGM_CALL_LOG");
    if (!path || !*path) return;
    FILE *f = fopen(path, "a");
    if (!f) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}

static int numGpus(void) { return envInt("FAKE_DCGM_GPUS", 2); }

/* blackwell: FAKE_DCGM_BLACKWELL; gpm: the Hopper mode's GPM behaviour, which Blackwell implies. */
static int blackwell(void) { return envInt("FAKE_DCGM_BLACKWELL", 0); }
static int gpm(void) { return envInt("FAKE_DCGM_HOPPER", 0) || blackwell(); }

/* The fake GPUs' NVLink links (an H100 SXM or a B200 has 18). */
#define FAKE_LINKS 18

const char *errorString(dcgmReturn_t result) {
    switch (result) {
    case DCGM_ST_OK: return "Success";
    case DCGM_ST_BADPARAM: return "Bad parameter passed to function";
    case DCGM_ST_NOT_SUPPORTED: return "This request is not supported";
    case DCGM_ST_VER_MISMATCH: return "Version mismatch between received and understood API";
    case DCGM_ST_CONNECTION_NOT_VALID: return "Host engine connection invalid/disconnected";
    case DCGM_ST_MODULE_NOT_LOADED: return "This request is serviced by a module of DCGM that is not currently loaded";
    case DCGM_ST_UNINITIALIZED: return "Host engine is not initialized";
    default: return "Unknown error";
    }
}

dcgmReturn_t dcgmInit(void) {
    logCall("dcgmInit");
    initialized = 1;
    return DCGM_ST_OK;
}

dcgmReturn_t dcgmShutdown(void) {
    logCall("dcgmShutdown");
    initialized = 0;
    return DCGM_ST_OK;
}

dcgmReturn_t dcgmStartEmbedded(dcgmOperationMode_t opMode, dcgmHandle_t *pDcgmHandle) {
    logCall("dcgmStartEmbedded %d", (int)opMode);
    if (!initialized || !pDcgmHandle) return DCGM_ST_UNINITIALIZED;
    *pDcgmHandle = 1;
    connected = 1;
    return DCGM_ST_OK;
}

dcgmReturn_t dcgmStopEmbedded(dcgmHandle_t pDcgmHandle) {
    logCall("dcgmStopEmbedded");
    connected = 0;
    return DCGM_ST_OK;
}

dcgmReturn_t dcgmConnect_v2(const char *ipAddress, dcgmConnectV2Params_t *connectParams, dcgmHandle_t *pDcgmHandle) {
    logCall("dcgmConnect_v2 %s %u", ipAddress ? ipAddress : "(null)", connectParams ? connectParams->addressIsUnixSocket : 99);
    if (!initialized) return DCGM_ST_UNINITIALIZED;
    if (!connectParams || connectParams->version != dcgmConnectV2Params_version) return DCGM_ST_VER_MISMATCH;
    if (envInt("FAKE_DCGM_CONNECT_FAIL", 0)) return DCGM_ST_CONNECTION_NOT_VALID;
    *pDcgmHandle = 1;
    connected = 1;
    if (!startUs) startUs = nowUs() / 1000000LL * 1000000LL;
    return DCGM_ST_OK;
}

dcgmReturn_t dcgmDisconnect(dcgmHandle_t pDcgmHandle) {
    logCall("dcgmDisconnect");
    connected = 0;
    return DCGM_ST_OK;
}

static dcgmReturn_t listGpus(unsigned int gpuIdList[DCGM_MAX_NUM_DEVICES], int *count) {
    if (!connected) return DCGM_ST_CONNECTION_NOT_VALID;
    int n = numGpus();
    for (int i = 0; i < n && i < DCGM_MAX_NUM_DEVICES; i++) gpuIdList[i] = (unsigned int)i;
    *count = n;
    return DCGM_ST_OK;
}

dcgmReturn_t dcgmGetAllDevices(dcgmHandle_t h, unsigned int gpuIdList[DCGM_MAX_NUM_DEVICES], int *count) {
    logCall("dcgmGetAllDevices");
    return listGpus(gpuIdList, count);
}

dcgmReturn_t dcgmGetAllSupportedDevices(dcgmHandle_t h, unsigned int gpuIdList[DCGM_MAX_NUM_DEVICES], int *count) {
    logCall("dcgmGetAllSupportedDevices");
    return listGpus(gpuIdList, count);
}

dcgmReturn_t dcgmProfGetSupportedMetricGroups(dcgmHandle_t h, dcgmProfGetMetricGroups_t *mg) {
    logCall("dcgmProfGetSupportedMetricGroups %u", mg ? mg->gpuId : 0);
    if (!connected) return DCGM_ST_CONNECTION_NOT_VALID;
    if (!mg || mg->version != dcgmProfGetMetricGroups_version3) return DCGM_ST_VER_MISMATCH;
    if (envInt("FAKE_DCGM_NO_PROF", 0)) return DCGM_ST_MODULE_NOT_LOADED;
    if (gpm()) {
        static const unsigned short ranges[3][2] = {{1001, 1034}, {1040, 1083}, {1084, 1096}};
        mg->numMetricGroups = 3;
        for (int g = 0; g < 3; g++) {
            mg->metricGroups[g].majorId = (unsigned short)g;
            mg->metricGroups[g].minorId = 0;
            mg->metricGroups[g].numFieldIds = 0;
            for (unsigned short id = ranges[g][0]; id <= ranges[g][1]; id++) {
                mg->metricGroups[g].fieldIds[mg->metricGroups[g].numFieldIds++] = id;
            }
        }
        if (blackwell()) {
            mg->metricGroups[1].fieldIds[mg->metricGroups[1].numFieldIds++] = DCGM_FI_PROF_NVLINK_TX_BYTES_PER_LINK;
            mg->metricGroups[1].fieldIds[mg->metricGroups[1].numFieldIds++] = DCGM_FI_PROF_NVLINK_RX_BYTES_PER_LINK;
        }
        return DCGM_ST_OK;
    }
    static const unsigned short g0[] = {DCGM_FI_PROF_GR_ENGINE_ACTIVE, DCGM_FI_PROF_SM_ACTIVE, DCGM_FI_PROF_DRAM_ACTIVE};
    static const unsigned short g1[] = {DCGM_FI_PROF_PCIE_TX_BYTES, DCGM_FI_PROF_PCIE_RX_BYTES,
                                        DCGM_FI_PROF_NVLINK_TX_BYTES, DCGM_FI_PROF_NVLINK_RX_BYTES};
    mg->numMetricGroups = 2;
    mg->metricGroups[0].majorId = 1;
    mg->metricGroups[0].minorId = 0;
    mg->metricGroups[0].numFieldIds = 3;
    memcpy(mg->metricGroups[0].fieldIds, g0, sizeof g0);
    mg->metricGroups[1].majorId = 2;
    mg->metricGroups[1].minorId = 0;
    mg->metricGroups[1].numFieldIds = 4;
    memcpy(mg->metricGroups[1].fieldIds, g1, sizeof g1);
    return DCGM_ST_OK;
}

dcgmReturn_t dcgmGroupCreate(dcgmHandle_t h, dcgmGroupType_t type, const char *groupName, dcgmGpuGrp_t *pDcgmGrpId) {
    logCall("dcgmGroupCreate %d %s", (int)type, groupName);
    if (!connected) return DCGM_ST_CONNECTION_NOT_VALID;
    for (int i = 1; i < MAX_GROUPS; i++) {
        if (!groups[i].used) {
            groups[i].used = 1;
            groups[i].ngpus = 0;
            *pDcgmGrpId = (dcgmGpuGrp_t)i;
            return DCGM_ST_OK;
        }
    }
    return DCGM_ST_MAX_LIMIT;
}

dcgmReturn_t dcgmGroupAddDevice(dcgmHandle_t h, dcgmGpuGrp_t groupId, unsigned int gpuId) {
    logCall("dcgmGroupAddDevice %lu %u", (unsigned long)groupId, gpuId);
    if (groupId >= MAX_GROUPS || !groups[groupId].used || (int)gpuId >= numGpus()) return DCGM_ST_BADPARAM;
    groups[groupId].egroup[groups[groupId].ngpus] = DCGM_FE_GPU;
    groups[groupId].gpus[groups[groupId].ngpus++] = gpuId;
    return DCGM_ST_OK;
}

dcgmReturn_t dcgmGroupAddEntity(dcgmHandle_t h, dcgmGpuGrp_t groupId, dcgm_field_entity_group_t entityGroupId,
                                dcgm_field_eid_t entityId) {
    logCall("dcgmGroupAddEntity %lu %d %u", (unsigned long)groupId, (int)entityGroupId, entityId);
    if (groupId >= MAX_GROUPS || !groups[groupId].used) return DCGM_ST_NOT_CONFIGURED;
    int mig = envInt("FAKE_DCGM_MIG", 0);
    dcgm_link_t link = {.raw = entityId};
    int ok = (entityGroupId == DCGM_FE_GPU && (int)entityId < numGpus()) ||
             (mig && (entityGroupId == DCGM_FE_GPU_I || entityGroupId == DCGM_FE_GPU_CI) && entityId == 0) ||
             (blackwell() && entityGroupId == DCGM_FE_LINK && link.parsed.type == DCGM_FE_GPU &&
              (int)link.parsed.gpuId < numGpus() && link.parsed.index < DCGM_NVLINK_MAX_LINKS_PER_GPU * 2);
    if (!ok) return DCGM_ST_BADPARAM;
    groups[groupId].egroup[groups[groupId].ngpus] = entityGroupId;
    groups[groupId].gpus[groups[groupId].ngpus++] = entityId;
    return DCGM_ST_OK;
}

dcgmReturn_t dcgmGetGpuInstanceHierarchy(dcgmHandle_t h, dcgmMigHierarchy_v2 *hierarchy) {
    logCall("dcgmGetGpuInstanceHierarchy");
    if (!connected) return DCGM_ST_CONNECTION_NOT_VALID;
    if (!hierarchy || hierarchy->version != dcgmMigHierarchy_version2) return DCGM_ST_VER_MISMATCH;
    hierarchy->count = 0;
    if (!envInt("FAKE_DCGM_MIG", 0)) return DCGM_ST_OK;
    dcgmMigHierarchyInfo_v2 *gi = &hierarchy->entityList[0], *ci = &hierarchy->entityList[1];
    memset(gi, 0, 2 * sizeof *gi);
    gi->entity.entityGroupId = DCGM_FE_GPU_I;
    gi->entity.entityId = 0;
    gi->parent.entityGroupId = DCGM_FE_GPU;
    gi->parent.entityId = 0;
    ci->entity.entityGroupId = DCGM_FE_GPU_CI;
    ci->entity.entityId = 0;
    ci->parent.entityGroupId = DCGM_FE_GPU_I;
    ci->parent.entityId = 0;
    snprintf(gi->info.gpuUuid, sizeof gi->info.gpuUuid, "GPU-fake0000-0000-0000-0000-000000000000");
    snprintf(ci->info.gpuUuid, sizeof ci->info.gpuUuid, "GPU-fake0000-0000-0000-0000-000000000000");
    hierarchy->count = 2;
    return DCGM_ST_OK;
}

dcgmReturn_t dcgmGetNvLinkLinkStatus(dcgmHandle_t h, dcgmNvLinkStatus_v5 *linkStatus) {
    logCall("dcgmGetNvLinkLinkStatus");
    if (!connected) return DCGM_ST_CONNECTION_NOT_VALID;
    if (!linkStatus || linkStatus->version != dcgmNvLinkStatus_version5) return DCGM_ST_VER_MISMATCH;
    int n = numGpus() < DCGM_MAX_NUM_DEVICES ? numGpus() : DCGM_MAX_NUM_DEVICES;
    linkStatus->numGpus = (unsigned int)n;
    linkStatus->numNvSwitches = 0;
    for (int g = 0; g < n; g++) {
        linkStatus->gpus[g].entityId = (dcgm_field_eid_t)g;
        for (int l = 0; l < DCGM_NVLINK_MAX_LINKS_PER_GPU; l++) {
            linkStatus->gpus[g].linkState[l] = l < FAKE_LINKS ? DcgmNvLinkLinkStateUp : DcgmNvLinkLinkStateNotSupported;
        }
    }
    return DCGM_ST_OK;
}

dcgmReturn_t dcgmGroupDestroy(dcgmHandle_t h, dcgmGpuGrp_t groupId) {
    logCall("dcgmGroupDestroy %lu", (unsigned long)groupId);
    if (groupId >= MAX_GROUPS || !groups[groupId].used) return DCGM_ST_NOT_CONFIGURED;
    groups[groupId].used = 0;
    return DCGM_ST_OK;
}

dcgmReturn_t dcgmFieldGroupCreate(dcgmHandle_t h, int numFieldIds, const unsigned short *fieldIds,
                                  const char *fieldGroupName, dcgmFieldGrp_t *dcgmFieldGroupId) {
    logCall("dcgmFieldGroupCreate %d %s", numFieldIds, fieldGroupName);
    if (!connected) return DCGM_ST_CONNECTION_NOT_VALID;
    if (numFieldIds <= 0 || numFieldIds > DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP) return DCGM_ST_BADPARAM;
    for (int i = 1; i < MAX_GROUPS; i++) {
        if (!fieldGroups[i].used) {
            fieldGroups[i].used = 1;
            fieldGroups[i].nfields = numFieldIds;
            memcpy(fieldGroups[i].fields, fieldIds, sizeof(unsigned short) * (size_t)numFieldIds);
            *dcgmFieldGroupId = (dcgmFieldGrp_t)i;
            return DCGM_ST_OK;
        }
    }
    return DCGM_ST_MAX_LIMIT;
}

dcgmReturn_t dcgmFieldGroupDestroy(dcgmHandle_t h, dcgmFieldGrp_t id) {
    logCall("dcgmFieldGroupDestroy %lu", (unsigned long)id);
    if (id >= MAX_GROUPS || !fieldGroups[id].used) return DCGM_ST_NO_DATA;
    fieldGroups[id].used = 0;
    return DCGM_ST_OK;
}

dcgmReturn_t dcgmWatchFields(dcgmHandle_t h, dcgmGpuGrp_t groupId, dcgmFieldGrp_t fieldGroupId, long long updateFreq,
                             double maxKeepAge, int maxKeepSamples) {
    logCall("dcgmWatchFields %lu %lu %lld %.0f %d", (unsigned long)groupId, (unsigned long)fieldGroupId, updateFreq,
            maxKeepAge, maxKeepSamples);
    if (groupId >= MAX_GROUPS || !groups[groupId].used) return DCGM_ST_NOT_CONFIGURED;
    if (fieldGroupId >= MAX_GROUPS || !fieldGroups[fieldGroupId].used) return DCGM_ST_NOT_CONFIGURED;
    return DCGM_ST_OK;
}

dcgmReturn_t dcgmUnwatchFields(dcgmHandle_t h, dcgmGpuGrp_t groupId, dcgmFieldGrp_t fieldGroupId) {
    logCall("dcgmUnwatchFields %lu %lu", (unsigned long)groupId, (unsigned long)fieldGroupId);
    return DCGM_ST_OK;
}

dcgmReturn_t dcgmUpdateAllFields(dcgmHandle_t h, int waitForUpdate) {
    logCall("dcgmUpdateAllFields %d", waitForUpdate);
    return connected ? DCGM_ST_OK : DCGM_ST_CONNECTION_NOT_VALID;
}

/* fillLatest writes the scripted latest value of one field of one GPU. */
/* healthReads counts the latest reads of field 1204 per GPU: the link-health counters grow with it. */
static int healthReads[DCGM_MAX_NUM_DEVICES];

/* fillHealth fills the link-health fields of FAKE_DCGM_NVLINK5 (see the header) and returns 1, or
 * returns 0 for any other field or without the knob. */
static int fillHealth(unsigned int gpu, unsigned short field, dcgmFieldValue_v2 *v) {
    int counter = (field >= DCGM_FI_DEV_NVLINK_RX_PACKET_MALFORMED_TOTAL && field <= DCGM_FI_DEV_NVLINK_RX_SYMBOL_ERROR_TOTAL &&
                   field != DCGM_FI_DEV_NVLINK_RECOVERY_SUCCESSFUL_TOTAL) ||
                  field == DCGM_FI_DEV_NVLINK_EFFECTIVE_ERROR_TOTAL;
    int ber = field == DCGM_FI_DEV_NVLINK_SYMBOL_BER_RATIO || field == DCGM_FI_DEV_NVLINK_EFFECTIVE_BER_RATIO;
    int c2c = field >= DCGM_FI_DEV_C2C_LINK_ERROR_TOTAL && field <= DCGM_FI_DEV_C2C_LINK_REPLAY_ERROR_B2B_TOTAL;
    if (!(counter || ber || c2c) || !envInt("FAKE_DCGM_NVLINK5", 0) || gpu >= DCGM_MAX_NUM_DEVICES) return 0;
    if (gpu != 0) {
        if (ber) {
            v->fieldType = DCGM_FT_DOUBLE;
            v->value.dbl = DCGM_FP64_NOT_SUPPORTED;
        } else {
            v->value.i64 = DCGM_INT64_NOT_SUPPORTED;
        }
        return 1;
    }
    if (field == DCGM_FI_DEV_NVLINK_RX_PACKET_MALFORMED_TOTAL) healthReads[gpu]++;
    if (ber) {
        v->fieldType = DCGM_FT_DOUBLE;
        v->value.dbl = field == DCGM_FI_DEV_NVLINK_SYMBOL_BER_RATIO ? 2.5e-9 : 1e-15;
    } else if (c2c) {
        v->value.i64 = field == DCGM_FI_DEV_C2C_LINK_ERROR_TOTAL ? 7
                     : field == DCGM_FI_DEV_C2C_LINK_REPLAY_ERROR_TOTAL ? healthReads[gpu] : 1;
    } else {
        v->value.i64 = 10LL * field + 5LL * healthReads[gpu];
    }
    return 1;
}

static void fillLatest(unsigned int gpu, unsigned short field, dcgmFieldValue_v2 *v) {
    memset(v, 0, sizeof *v);
    v->version = dcgmFieldValue_version2;
    v->entityGroupId = DCGM_FE_GPU;
    v->entityId = gpu;
    v->fieldId = field;
    v->status = DCGM_ST_OK;
    v->ts = FAKE_BASE_US + FAKE_SAMPLES * 1000000LL;
    v->fieldType = DCGM_FT_INT64;
    switch (field) {
    case DCGM_FI_DEV_GPU_NAME:
        v->fieldType = DCGM_FT_STRING;
        snprintf(v->value.str, sizeof v->value.str, blackwell() ? "NVIDIA B200" : "NVIDIA H100 80GB HBM3");
        return;
    case DCGM_FI_DEV_GPU_UUID:
        v->fieldType = DCGM_FT_STRING;
        snprintf(v->value.str, sizeof v->value.str, "GPU-fake%04u-0000-0000-0000-000000000000", gpu);
        return;
    case DCGM_FI_DEV_PCI_BUS_ID:
        v->fieldType = DCGM_FT_STRING;
        snprintf(v->value.str, sizeof v->value.str, "00000000:%02X:00.0", 0x1b + 0x20 * gpu);
        return;
    case DCGM_FI_DEV_GPU_UTIL: v->value.i64 = 42; return;
    case DCGM_FI_DEV_MEM_COPY_UTIL: v->value.i64 = 7; return;
    case DCGM_FI_DEV_PCIE_REPLAY_COUNTER: v->value.i64 = 3; return;
    case DCGM_FI_DEV_PCIE_MAX_LINK_GEN: v->value.i64 = 5; return;
    case DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH: v->value.i64 = 16; return;
    case DCGM_FI_DEV_PCIE_LINK_GEN: v->value.i64 = 4; return;
    case DCGM_FI_DEV_PCIE_LINK_WIDTH: v->value.i64 = gpu == 1 ? 8 : 16; return;
    case DCGM_FI_PROF_PCIE_TX_BYTES_TOTAL:
    case DCGM_FI_PROF_PCIE_RX_BYTES_TOTAL:
        if (!gpm()) {
            v->value.i64 = DCGM_INT64_BLANK;
            return;
        }
        /* Hopper mode: blank for the first two GPM samples, forever without the NVML metric. */
        if (field == DCGM_FI_PROF_PCIE_TX_BYTES_TOTAL && gpu < DCGM_MAX_NUM_DEVICES) gpmReads[gpu]++;
        if (!envInt("FAKE_DCGM_GPM_PCIE", 0) || gpu >= DCGM_MAX_NUM_DEVICES || gpmReads[gpu] <= 2) {
            v->value.i64 = DCGM_INT64_BLANK;
            return;
        }
        v->ts = nowUs();
        {
            long long elapsedUs = v->ts - startUs;
            if (field == DCGM_FI_PROF_PCIE_TX_BYTES_TOTAL) {
                v->value.i64 = 5000000000000LL + 1000LL * (gpu + 1) * elapsedUs / 1000000LL;
            } else {
                v->value.i64 = 7000000000000LL + 2000LL * elapsedUs / 1000000LL;
            }
        }
        return;
    case DCGM_FI_DEV_NVLINK_TX_BYTES_TOTAL:
    case DCGM_FI_DEV_NVLINK_RX_BYTES_TOTAL: v->value.i64 = DCGM_INT64_NOT_SUPPORTED; return;
    /* Hopper mode models an H100 SXM: NVLink, no C2C link; FAKE_DCGM_GH200 makes GPU 0 a GH200's
     * Hopper with its C2C link to Grace. */
    case DCGM_FI_DEV_C2C_LINK_QUANTITY:
        v->value.i64 = !gpm() ? DCGM_INT64_BLANK : (envInt("FAKE_DCGM_GH200", 0) && gpu == 0) ? 1 : 0;
        return;
    case DCGM_FI_PROF_GR_ENGINE_ACTIVE: v->fieldType = DCGM_FT_DOUBLE; v->value.dbl = 0.25; return;
    case DCGM_FI_PROF_SM_ACTIVE:
        v->fieldType = DCGM_FT_DOUBLE;
        if (gpu == 1) {
            v->status = DCGM_ST_NOT_SUPPORTED;
            v->value.dbl = DCGM_FP64_NOT_SUPPORTED;
        } else {
            v->value.dbl = 0.5;
        }
        return;
    case DCGM_FI_PROF_DRAM_ACTIVE: v->fieldType = DCGM_FT_DOUBLE; v->value.dbl = 0.125; return;
    default:
        if (fillHealth(gpu, field, v)) return;
        v->value.i64 = DCGM_INT64_BLANK;
        return;
    }
}

/* linkRate is link l's rate in bytes/s through 1532 (tx) or 1533 (rx), FAKE_DCGM_BLACKWELL. */
static long long linkRate(unsigned int l, int tx) {
    if (l >= 16) return 0; /* idle */
    long long skew = (2LL * (long long)l - 15LL) * 1000000LL;
    long long r = 62500000LL + (tx ? skew : -skew);
    return envInt("FAKE_DCGM_LINKS_SHORT", 0) ? r * 4 / 5 : r;
}

/* linkSample returns 1 and fills v when the DCGM_FE_LINK entity has a sample of field at second k. */
static int linkSample(dcgm_field_eid_t entityId, unsigned short field, long long base, int k, dcgmFieldValue_v1 *v) {
    memset(v, 0, sizeof *v);
    v->version = dcgmFieldValue_version1;
    v->fieldId = field;
    v->fieldType = DCGM_FT_INT64;
    v->status = DCGM_ST_OK;
    v->ts = base + (long long)k * 1000000LL;
    dcgm_link_t link = {.raw = entityId};
    if (!blackwell() || link.parsed.type != DCGM_FE_GPU || (int)link.parsed.gpuId >= numGpus() ||
        link.parsed.index >= FAKE_LINKS ||
        (field != DCGM_FI_PROF_NVLINK_TX_BYTES_PER_LINK && field != DCGM_FI_PROF_NVLINK_RX_BYTES_PER_LINK)) {
        return 0;
    }
    v->value.i64 = linkRate(link.parsed.index, field == DCGM_FI_PROF_NVLINK_TX_BYTES_PER_LINK);
    return 1;
}

/* fillLinkLatest answers a latest-value read of a DCGM_FE_LINK entity (FAKE_DCGM_BLACKWELL): a live
 * read is blank, as DCGM has no GPM sample of an unwatched entity; else the newest sample. */
static void fillLinkLatest(dcgm_field_eid_t entityId, unsigned short field, unsigned int flags, dcgmFieldValue_v2 *v) {
    dcgmFieldValue_v1 s;
    memset(v, 0, sizeof *v);
    v->version = dcgmFieldValue_version2;
    v->entityGroupId = DCGM_FE_LINK;
    v->entityId = entityId;
    v->fieldId = field;
    v->fieldType = DCGM_FT_INT64;
    v->ts = FAKE_BASE_US + FAKE_SAMPLES * 1000000LL;
    if (!linkSample(entityId, field, FAKE_BASE_US, FAKE_SAMPLES, &s)) {
        v->status = blackwell() ? DCGM_ST_OK : DCGM_ST_BADPARAM;
        v->value.i64 = DCGM_INT64_NOT_SUPPORTED;
        return;
    }
    v->status = DCGM_ST_OK;
    v->value.i64 = (flags & DCGM_FV_FLAG_LIVE_DATA) ? DCGM_INT64_BLANK : s.value.i64;
}

dcgmReturn_t dcgmEntitiesGetLatestValues(dcgmHandle_t h, dcgmGroupEntityPair_t entities[], unsigned int entityCount,
                                         unsigned short fields[], unsigned int fieldCount, unsigned int flags,
                                         dcgmFieldValue_v2 values[]) {
    logCall("dcgmEntitiesGetLatestValues %u %u %u", entityCount, fieldCount, flags);
    if (!connected) return DCGM_ST_CONNECTION_NOT_VALID;
    for (unsigned int e = 0; e < entityCount; e++) {
        for (unsigned int f = 0; f < fieldCount; f++) {
            dcgmFieldValue_v2 *v = &values[e * fieldCount + f];
            if (entities[e].entityGroupId == DCGM_FE_LINK) {
                fillLinkLatest(entities[e].entityId, fields[f], flags, v);
                continue;
            }
            fillLatest(entities[e].entityId, fields[f], v);
            v->entityGroupId = entities[e].entityGroupId;
            if (entities[e].entityGroupId != DCGM_FE_GPU || (int)entities[e].entityId >= numGpus()) {
                v->status = DCGM_ST_BADPARAM;
            }
        }
    }
    return DCGM_ST_OK;
}

/* historySample returns 1 and fills v when the field has a sample at second k (1..FAKE_SAMPLES). */
static int historySample(unsigned int gpu, unsigned short field, long long base, int k, dcgmFieldValue_v1 *v) {
    memset(v, 0, sizeof *v);
    v->version = dcgmFieldValue_version1;
    v->fieldId = field;
    v->fieldType = DCGM_FT_INT64;
    v->status = DCGM_ST_OK;
    v->ts = base + (long long)k * 1000000LL;
    int hopper = gpm();
    switch (field) {
    case DCGM_FI_PROF_PCIE_TX_BYTES:
        if (envInt("FAKE_DCGM_LATE", 0) && k >= 6 && k <= 8) return 0;
        v->value.i64 = (hopper && k == 1) ? DCGM_INT64_BLANK : 1000LL * (gpu + 1);
        return 1;
    case DCGM_FI_PROF_PCIE_RX_BYTES: v->value.i64 = k == 1 ? DCGM_INT64_BLANK : 2000; return 1;
    case DCGM_FI_PROF_NVLINK_TX_BYTES:
    case DCGM_FI_PROF_NVLINK_RX_BYTES: v->value.i64 = 1000000000LL; return 1;
    case DCGM_FI_PROF_C2C_TX_ALL_BYTES:
    case DCGM_FI_PROF_C2C_RX_ALL_BYTES:
        /* FAKE_DCGM_GH200: GPU 0's host copies cross C2C at the PCIe rates above. */
        if (!envInt("FAKE_DCGM_GH200", 0) || gpu != 0) return 0;
        v->value.i64 = field == DCGM_FI_PROF_C2C_TX_ALL_BYTES ? 1000LL : 2000LL;
        return 1;
    case DCGM_FI_DEV_XID_ERRORS:
        if (gpu == 0 && k == 5) {
            v->value.i64 = 79;
            return 1;
        }
        return 0;
    }
    if (blackwell() && field >= DCGM_FI_PROF_NVLINK_L0_TX_BYTES && field <= DCGM_FI_PROF_NVLINK_L17_RX_BYTES) {
        v->value.i64 = DCGM_INT64_BLANK; /* the B200's links are 1532/1533's (linkSample) */
        return 1;
    }
    if (hopper && field >= DCGM_FI_PROF_NVLINK_L0_TX_BYTES && field <= DCGM_FI_PROF_NVLINK_L17_RX_BYTES) {
        /* An H100 SXM's 18 links, 16 of them carrying 62.5 MB/s each way (their sum is the
         * aggregate 1011/1012, 1e9 B/s) and links 16 and 17 idle: a link that carries nothing
         * while its peers carry traffic. */
        int link = (field - DCGM_FI_PROF_NVLINK_L0_TX_BYTES) / 2;
        long long each = envInt("FAKE_DCGM_LINKS_SHORT", 0) ? 50000000LL : 62500000LL;
        v->value.i64 = link < 16 ? each : 0;
        return 1;
    }
    return 0;
}

/* migSample: the XID raised inside compute instance 0 at second 7 (FAKE_DCGM_MIG). */
static int migSample(dcgm_field_entity_group_t eg, unsigned short field, long long base, int k, dcgmFieldValue_v1 *v) {
    memset(v, 0, sizeof *v);
    v->version = dcgmFieldValue_version1;
    v->fieldId = field;
    v->fieldType = DCGM_FT_INT64;
    v->status = DCGM_ST_OK;
    v->ts = base + (long long)k * 1000000LL;
    if (eg == DCGM_FE_GPU_CI && field == DCGM_FI_DEV_XID_ERRORS && k == 7) {
        v->value.i64 = 43;
        return 1;
    }
    return 0;
}

dcgmReturn_t dcgmGetValuesSince_v2(dcgmHandle_t h, dcgmGpuGrp_t groupId, dcgmFieldGrp_t fieldGroupId,
                                   long long sinceTimestamp, long long *nextSinceTimestamp,
                                   dcgmFieldValueEntityEnumeration_f enumCB, void *userData) {
    logCall("dcgmGetValuesSince_v2 %lld", sinceTimestamp);
    if (!connected) return DCGM_ST_CONNECTION_NOT_VALID;
    if (groupId >= MAX_GROUPS || !groups[groupId].used) return DCGM_ST_NOT_CONFIGURED;
    if (fieldGroupId >= MAX_GROUPS || !fieldGroups[fieldGroupId].used) return DCGM_ST_NOT_CONFIGURED;
    if (++sinceCalls == envInt("FAKE_DCGM_DROP_AT", 0)) {
        connected = 0;
        return DCGM_ST_CONNECTION_NOT_VALID;
    }
    int samples = envInt("FAKE_DCGM_SAMPLES", FAKE_SAMPLES);
    long long base = FAKE_BASE_US;
    if (envInt("FAKE_DCGM_REALTIME", 0)) {
        /* One sample a second from the first connect up to now; sample k is at base + k s. */
        base = startUs - 1000000LL;
        samples = (int)((nowUs() - base) / 1000000LL);
    } else if (envInt("FAKE_DCGM_LIVE", 0) && sinceTimestamp > 0) {
        /* FAKE_DCGM_LIVE: every call serves the next ten seconds, as a hostengine does between scrapes. */
        base = sinceTimestamp - 1;
    }
    dcgmFieldValue_v1 *buf = calloc((size_t)samples * DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP + 1, sizeof *buf);
    if (!buf) return DCGM_ST_MEMORY;
    long long next = sinceTimestamp;
    for (int g = 0; g < groups[groupId].ngpus; g++) {
        unsigned int gpu = groups[groupId].gpus[g];
        dcgm_field_entity_group_t eg = groups[groupId].egroup[g];
        int n = 0;
        for (int f = 0; f < fieldGroups[fieldGroupId].nfields; f++) {
            for (int k = 1; k <= samples; k++) {
                dcgmFieldValue_v1 v;
                unsigned short field = fieldGroups[fieldGroupId].fields[f];
                int has = eg == DCGM_FE_GPU    ? historySample(gpu, field, base, k, &v)
                          : eg == DCGM_FE_LINK ? linkSample(gpu, field, base, k, &v)
                                               : migSample(eg, field, base, k, &v);
                if (has && v.ts >= sinceTimestamp) {
                    buf[n++] = v;
                    if (v.ts + 1 > next) next = v.ts + 1;
                }
            }
        }
        if (n > 0 && enumCB(eg, gpu, buf, n, userData) != 0) break;
    }
    free(buf);
    *nextSinceTimestamp = next;
    return DCGM_ST_OK;
}

/*
 * A fake libnvidia-ml.so.1 for the gpu receiver's tests: it lets go-nvml's real cgo path (dlopen of
 * "libnvidia-ml.so.1" at Init, the versioned-symbol probe, lazily bound symbols, the C structs) run
 * on a machine with no GPU and no NVIDIA driver, in the receiver's tests and in the built collector.
 *
 * It follows nvml.h as vendored by go-nvml v0.13.4-1 (pkg/nvml/nvml.h, NVML_API_VERSION 13,
 * "Copyright 1993-2026 NVIDIA Corporation") and is compiled against that header, so the compiler
 * checks every signature and struct it fills (nvmlFieldValue_t, nvmlPciInfo_t, nvmlGpmSample_t,
 * nvmlGpmMetricsGet_t with NVML_GPM_METRICS_GET_VERSION 1, nvmlGpmSupport_t with
 * NVML_GPM_SUPPORT_VERSION 1) against the declarations go-nvml uses. It is built with
 * NVML_NO_UNVERSIONED_FUNC_DEFS, as go-nvml is (pkg/nvml/nvml.go cgo CFLAGS), so that each function
 * keeps its exported name.
 *
 * It exports only the entry points the gpu receiver reaches through go-nvml: nvmlInit_v2 and the
 * _v2/_v3 names that go-nvml's updateVersionedSymbols (pkg/nvml/lib.go) looks up and then calls
 * (nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetPciInfo_v3), nvmlErrorString
 * (go-nvml's Return.Error once the library is loaded), and the getters of receiver/gpureceiver/
 * nvml.go. A call to anything else dies with "symbol lookup error", as it would against a driver
 * without that function: go-nvml binds lazily. Built with -DFAKE_NVML_NO_GPM (fakenvml.BuildWithoutGPM)
 * it lacks the five nvmlGpm* functions, as the NVML of a driver that predates GPM does.
 *
 * GPUs (FAKE_NVML_GPUS, default 2; GPU g at PCI bus 0x1B + 0x20 g, "%08X:%02X:%02X.0" as
 * NVML_DEVICE_PCI_BUS_ID_FMT), the model by FAKE_NVML_MODEL:
 *   h100 (default)  "NVIDIA H100 80GB HBM3": GPM (nvmlGpmQueryDeviceSupport isSupportedDevice 1) with
 *                   PCIe 20/21 and NVLink 60/61 rates; NVML_FI_DEV_C2C_LINK_COUNT (170) 0; 18 NVLinks.
 *   gh200           "NVIDIA GH200 480GB": as h100, plus C2C: field 170 answers 10 and GPM serves the
 *                   C2C rates 100/101 (C2C_TOTAL_TX/RX_PER_SEC).
 *   a100            "NVIDIA A100-SXM4-80GB": GPM functions present but isSupportedDevice 0 (GPM is
 *                   "For Hopper or newer fully supported devices", nvml.h), nvmlGpmSampleGet answers
 *                   NVML_ERROR_NOT_SUPPORTED; 12 NVLinks; PCIe bytes only from fields 197/198.
 * Knobs: FAKE_NVML_GPM_PCIE=0 (the GPU's GPM answers NVML_ERROR_NOT_SUPPORTED per metric for 20/21,
 *   as on a driver whose GPM lacks them), FAKE_NVML_GPM_C2C=0 (the same for 100/101 on a gh200),
 *   FAKE_NVML_CALL_LOG=<file> (one line per call worth checking, with the sample timestamps and
 *   counter values), FAKE_NVML_CLOCK_FILE=<file> (the fake's clock in microseconds since 1970 is
 *   read from that file at each call, so that a test drives the same clock as the receiver's;
 *   without it the fake follows CLOCK_REALTIME), FAKE_NVML_PCIE_BURST=<on_us>:<every_us>:<MiB/s>
 *   (every GPU's PCIe TX moves in bursts instead of at its constant rate: <MiB/s> for the first
 *   <on_us> of every <every_us> since the epoch, nothing in between; the JANOG step of a training
 *   loop is 40000:600000).
 *
 * Traffic: every GPU moves bytes at constant rates from the fake's epoch (the first nvmlInit_v2 in
 * real time, or 1.7e15 us with a clock file): PCIe TX (g+1) x 5 MiB/s, RX 3 MiB/s; NVLink TX/RX
 * 100 MiB/s (all links together, spread evenly); C2C TX 40 MiB/s, RX 20 MiB/s (gh200). One byte
 * count per quantity, bytes(t) = rate x (t - epoch), is the truth that both views are read from:
 *   - the cumulative fields 197/198 (bytes, NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, each value's
 *     timestamp the clock it was computed at) and 138/139 (KiB,
 *     "NVLink TX/RX Data throughput in KiB", scopeId UINT_MAX for all links or a link id);
 *   - GPM: nvmlGpmSampleGet stores the clock and every byte count in the sample; nvmlGpmMetricsGet
 *     answers (bytes2 - bytes1) / (t2 - t1) in MiB/s for the two samples' own timestamps, so a
 *     rate times the time between the samples is exactly the bytes moved between them.
 *   Activity GPM metrics: GRAPHICS_UTIL 90, SM_UTIL 80, DRAM_BW_UTIL 37.5 (percent).
 * Latest values: nvmlDeviceGetUtilizationRates 42 % / 7 %, PCIe replays 3, link gen 4 of max 5,
 * width 16 of 16 (GPU 1: 8, a downgraded link). NVLink5 totals 202/204 answer NOT_SUPPORTED.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nvml.h"

#define MAX_GPUS 16
#define MIB (1024.0 * 1024.0)
#define CLOCK_FILE_EPOCH_US 1700000000000000LL

/* The quantities a GPU moves bytes through, each with its own rate. */
enum { Q_PCIE_TX, Q_PCIE_RX, Q_NVLINK_TX, Q_NVLINK_RX, Q_C2C_TX, Q_C2C_RX, NUM_Q };

struct nvmlDevice_st {
    unsigned int index;
};

/* A GPM sample: the clock and every byte count when nvmlGpmSampleGet filled it. */
struct nvmlGpmSample_st {
    unsigned int magic;
    int filled;
    unsigned int gpu;
    long long tsUs;
    unsigned long long bytes[NUM_Q];
};
#define SAMPLE_MAGIC 0x47504d53u

static struct nvmlDevice_st devices[MAX_GPUS];
static int initCount;
static long long epochUs = -1;

static int envInt(const char *name, int def) {
    const char *v = getenv(name);
    return (v && *v) ? atoi(v) : def;
}

static int numGpus(void) {
    int n = envInt("FAKE_NVML_GPUS", 2);
    return n > MAX_GPUS ? MAX_GPUS : n;
}

static const char *model(void) {
    const char *m = getenv("FAKE_NVML_MODEL");
    return (m && *m) ? m : "h100";
}

static int isGH200(void) { return strcmp(model(), "gh200") == 0; }
static int isA100(void) { return strcmp(model(), "a100") == 0; }
static unsigned int nvlinks(void) { return isA100() ? 12 : 18; }

static void logCall(const char *fmt, ...) {
    const char *path = getenv("FAKE_NVML_CALL_LOG");
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

/* nowUs is the fake's clock: the test's clock file, else CLOCK_REALTIME. */
static long long nowUs(void) {
    const char *path = getenv("FAKE_NVML_CLOCK_FILE");
    if (path && *path) {
        FILE *f = fopen(path, "r");
        long long us = 0;
        if (f) {
            if (fscanf(f, "%lld", &us) != 1) us = 0;
            fclose(f);
        }
        return us;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* rate returns quantity q's bytes per second on GPU g. */
static unsigned long long rate(unsigned int g, int q) {
    switch (q) {
    case Q_PCIE_TX: return (g + 1) * 5ULL << 20;
    case Q_PCIE_RX: return 3ULL << 20;
    case Q_NVLINK_TX:
    case Q_NVLINK_RX: return 100ULL << 20;
    case Q_C2C_TX: return isGH200() ? 40ULL << 20 : 0;
    case Q_C2C_RX: return isGH200() ? 20ULL << 20 : 0;
    }
    return 0;
}

/* scaled is r bytes/s times us microseconds, without overflowing for days of traffic. */
static unsigned long long scaled(unsigned long long r, long long us) {
    return r * (unsigned long long)(us / 1000000) + r * (unsigned long long)(us % 1000000) / 1000000ULL;
}

/* burst is FAKE_NVML_PCIE_BURST, parsed once: whether it is set, and its shape. */
static int burst(long long *onUs, long long *everyUs, unsigned long long *bytesPerSec) {
    static int parsed, set;
    static long long on, every;
    static unsigned long long r;
    if (!parsed) {
        const char *v = getenv("FAKE_NVML_PCIE_BURST");
        unsigned long long mibs = 0;
        parsed = 1;
        set = v && sscanf(v, "%lld:%lld:%llu", &on, &every, &mibs) == 3 && on > 0 && every >= on;
        r = mibs << 20;
    }
    *onUs = on;
    *everyUs = every;
    *bytesPerSec = r;
    return set;
}

/* bytesAt is the byte count of quantity q on GPU g at time t: rate x (t - epoch), or for PCIe TX
 * with FAKE_NVML_PCIE_BURST the burst rate x the time spent in bursts since the epoch. */
static unsigned long long bytesAt(unsigned int g, int q, long long t) {
    long long dt = t - epochUs;
    if (dt < 0) dt = 0;
    long long on, every;
    unsigned long long br;
    if (q == Q_PCIE_TX && burst(&on, &every, &br)) {
        long long in = dt % every;
        return scaled(br, (dt / every) * on + (in < on ? in : on));
    }
    return scaled(rate(g, q), dt);
}

static struct nvmlDevice_st *dev(nvmlDevice_t device) {
    /* nvmlDevice_t is a struct holding the handle (nvml.h), passed by value. */
    if (!initCount || !device.handle) return NULL;
    for (int i = 0; i < numGpus(); i++)
        if (device.handle == &devices[i]) return device.handle;
    return NULL;
}

const char *nvmlErrorString(nvmlReturn_t result) {
    /* nvml.h documents the codes, not the strings: this wording is the driver library's as far as
     * its messages are commonly quoted (inference), and tests do not depend on more than that. */
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlInit_v2(void) {
    logCall("nvmlInit_v2");
    if (epochUs < 0) epochUs = getenv("FAKE_NVML_CLOCK_FILE") ? CLOCK_FILE_EPOCH_US : nowUs();
    for (int i = 0; i < MAX_GPUS; i++) devices[i].index = (unsigned int)i;
    initCount++;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
    logCall("nvmlShutdown");
    if (!initCount) return NVML_ERROR_UNINITIALIZED;
    initCount--;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount) {
    if (!initCount) return NVML_ERROR_UNINITIALIZED;
    if (!deviceCount) return NVML_ERROR_INVALID_ARGUMENT;
    *deviceCount = (unsigned int)numGpus();
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    if (!initCount) return NVML_ERROR_UNINITIALIZED;
    if (!device || index >= (unsigned int)numGpus()) return NVML_ERROR_INVALID_ARGUMENT;
    device->handle = &devices[index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
    struct nvmlDevice_st *d = dev(device);
    if (!d || !uuid) return NVML_ERROR_INVALID_ARGUMENT;
    if (length < NVML_DEVICE_UUID_V2_BUFFER_SIZE) return NVML_ERROR_INSUFFICIENT_SIZE;
    snprintf(uuid, length, "GPU-fa4e%04x-0000-0000-0000-000000000000", d->index);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
    struct nvmlDevice_st *d = dev(device);
    if (!d || !name) return NVML_ERROR_INVALID_ARGUMENT;
    const char *n = isGH200() ? "NVIDIA GH200 480GB" : isA100() ? "NVIDIA A100-SXM4-80GB" : "NVIDIA H100 80GB HBM3";
    if (length < strlen(n) + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
    snprintf(name, length, "%s", n);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    struct nvmlDevice_st *d = dev(device);
    if (!d || !pci) return NVML_ERROR_INVALID_ARGUMENT;
    memset(pci, 0, sizeof(*pci));
    pci->domain = 0;
    pci->bus = 0x1B + 0x20 * d->index;
    pci->device = 0;
    pci->pciDeviceId = isA100() ? 0x20B510DE : isGH200() ? 0x234210DE : 0x233010DE;
    snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT, pci->domain, pci->bus, pci->device);
    snprintf(pci->busId, sizeof(pci->busId), NVML_DEVICE_PCI_BUS_ID_FMT, pci->domain, pci->bus, pci->device);
    return NVML_SUCCESS;
}

static void setULL(nvmlFieldValue_t *v, unsigned long long x) {
    v->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
    v->value.ullVal = x;
    v->nvmlReturn = NVML_SUCCESS;
}

static void setUInt(nvmlFieldValue_t *v, unsigned int x) {
    v->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
    v->value.uiVal = x;
    v->nvmlReturn = NVML_SUCCESS;
}

/* nvlinkKiB answers 138/139 for scopeId: UINT_MAX sums all links, a link id is that link's share. */
static void nvlinkKiB(nvmlFieldValue_t *v, unsigned int g, int q, long long t) {
    unsigned long long kib = bytesAt(g, q, t) / 1024;
    if (v->scopeId == 0xFFFFFFFFu) {
        setULL(v, kib);
    } else if (v->scopeId < nvlinks()) {
        setULL(v, kib / nvlinks());
    } else {
        v->nvmlReturn = NVML_ERROR_INVALID_ARGUMENT;
    }
}

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t *values) {
    struct nvmlDevice_st *d = dev(device);
    if (!d || !values || valuesCount <= 0) return NVML_ERROR_INVALID_ARGUMENT;
    long long t = nowUs();
    for (int i = 0; i < valuesCount; i++) {
        nvmlFieldValue_t *v = &values[i];
        v->timestamp = t;
        v->latencyUsec = 0;
        v->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        switch (v->fieldId) {
        case NVML_FI_DEV_PCIE_COUNT_TX_BYTES: setULL(v, bytesAt(d->index, Q_PCIE_TX, t)); break;
        case NVML_FI_DEV_PCIE_COUNT_RX_BYTES: setULL(v, bytesAt(d->index, Q_PCIE_RX, t)); break;
        case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX: nvlinkKiB(v, d->index, Q_NVLINK_TX, t); break;
        case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX: nvlinkKiB(v, d->index, Q_NVLINK_RX, t); break;
        case NVML_FI_DEV_NVLINK_LINK_COUNT: setUInt(v, nvlinks()); break;
        case NVML_FI_DEV_C2C_LINK_COUNT: setUInt(v, isGH200() ? 10 : 0); break;
        case NVML_FI_DEV_NVLINK_ERROR_DL_CRC:
        case NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY:
        case NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY:
            if (v->scopeId < nvlinks()) setULL(v, 0);
            else v->nvmlReturn = NVML_ERROR_INVALID_ARGUMENT;
            break;
        default:
            /* NVLink5 totals 202/204 and the rest: not on this GPU. An id past the table is
             * an invalid argument. */
            if (v->fieldId >= NVML_FI_MAX) v->nvmlReturn = NVML_ERROR_INVALID_ARGUMENT;
        }
        if (v->fieldId == NVML_FI_DEV_PCIE_COUNT_TX_BYTES || v->fieldId == NVML_FI_DEV_PCIE_COUNT_RX_BYTES)
            logCall("nvmlDeviceGetFieldValues %u %u %lld %llu", d->index, v->fieldId, t, v->value.ullVal);
    }
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization) {
    if (!dev(device) || !utilization) return NVML_ERROR_INVALID_ARGUMENT;
    utilization->gpu = 42;
    utilization->memory = 7;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int *value) {
    if (!dev(device) || !value) return NVML_ERROR_INVALID_ARGUMENT;
    *value = 3;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int *currLinkGen) {
    if (!dev(device) || !currLinkGen) return NVML_ERROR_INVALID_ARGUMENT;
    *currLinkGen = 4;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int *currLinkWidth) {
    struct nvmlDevice_st *d = dev(device);
    if (!d || !currLinkWidth) return NVML_ERROR_INVALID_ARGUMENT;
    *currLinkWidth = d->index == 1 ? 8 : 16;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int *maxLinkGen) {
    if (!dev(device) || !maxLinkGen) return NVML_ERROR_INVALID_ARGUMENT;
    *maxLinkGen = 5;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int *maxLinkWidth) {
    if (!dev(device) || !maxLinkWidth) return NVML_ERROR_INVALID_ARGUMENT;
    *maxLinkWidth = 16;
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_NO_GPM

static int hasGPM(void) { return !isA100(); }

nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t *gpmSupport) {
    struct nvmlDevice_st *d = dev(device);
    if (!d || !gpmSupport) return NVML_ERROR_INVALID_ARGUMENT;
    if (gpmSupport->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    gpmSupport->isSupportedDevice = hasGPM() ? 1 : 0;
    logCall("nvmlGpmQueryDeviceSupport %u %u", d->index, gpmSupport->isSupportedDevice);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *gpmSample) {
    if (!gpmSample) return NVML_ERROR_INVALID_ARGUMENT;
    struct nvmlGpmSample_st *s = calloc(1, sizeof(*s));
    if (!s) return NVML_ERROR_MEMORY;
    s->magic = SAMPLE_MAGIC;
    gpmSample->handle = s;
    logCall("nvmlGpmSampleAlloc");
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample) {
    struct nvmlGpmSample_st *s = gpmSample.handle;
    if (!s || s->magic != SAMPLE_MAGIC) return NVML_ERROR_INVALID_ARGUMENT;
    s->magic = 0;
    free(s);
    logCall("nvmlGpmSampleFree");
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample) {
    struct nvmlDevice_st *d = dev(device);
    struct nvmlGpmSample_st *s = gpmSample.handle;
    if (!d || !s || s->magic != SAMPLE_MAGIC) return NVML_ERROR_INVALID_ARGUMENT;
    if (!hasGPM()) return NVML_ERROR_NOT_SUPPORTED;
    s->gpu = d->index;
    s->tsUs = nowUs();
    for (int q = 0; q < NUM_Q; q++) s->bytes[q] = bytesAt(d->index, q, s->tsUs);
    s->filled = 1;
    logCall("nvmlGpmSampleGet %u %lld", d->index, s->tsUs);
    return NVML_SUCCESS;
}

/* mibPerSec is quantity q's rate between two samples, by their own timestamps. */
static double mibPerSec(const struct nvmlGpmSample_st *a, const struct nvmlGpmSample_st *b, int q) {
    double bytes = (double)(b->bytes[q] - a->bytes[q]);
    return bytes / ((double)(b->tsUs - a->tsUs) / 1e6) / MIB;
}

nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *metricsGet) {
    if (!metricsGet) return NVML_ERROR_INVALID_ARGUMENT;
    if (metricsGet->version != NVML_GPM_METRICS_GET_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    struct nvmlGpmSample_st *a = metricsGet->sample1.handle, *b = metricsGet->sample2.handle;
    if (!a || !b || a->magic != SAMPLE_MAGIC || b->magic != SAMPLE_MAGIC || !a->filled || !b->filled ||
        a->gpu != b->gpu || metricsGet->numMetrics > NVML_GPM_METRIC_MAX)
        return NVML_ERROR_INVALID_ARGUMENT;
    /* Two samples at the same instant have no period to average over (inference: nvml.h asks for
     * more than 100 ms between them). */
    if (b->tsUs <= a->tsUs) return NVML_ERROR_INVALID_ARGUMENT;
    int pcie = envInt("FAKE_NVML_GPM_PCIE", 1), c2c = isGH200() && envInt("FAKE_NVML_GPM_C2C", 1);
    for (unsigned int i = 0; i < metricsGet->numMetrics; i++) {
        nvmlGpmMetric_t *m = &metricsGet->metrics[i];
        m->nvmlReturn = NVML_SUCCESS;
        m->value = 0;
        memset(&m->metricInfo, 0, sizeof(m->metricInfo));
        switch (m->metricId) {
        case NVML_GPM_METRIC_GRAPHICS_UTIL: m->value = 90; break;
        case NVML_GPM_METRIC_SM_UTIL: m->value = 80; break;
        case NVML_GPM_METRIC_DRAM_BW_UTIL: m->value = 37.5; break;
        case NVML_GPM_METRIC_PCIE_TX_PER_SEC:
        case NVML_GPM_METRIC_PCIE_RX_PER_SEC:
            if (!pcie) {
                m->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
                break;
            }
            m->value = mibPerSec(a, b, m->metricId == NVML_GPM_METRIC_PCIE_TX_PER_SEC ? Q_PCIE_TX : Q_PCIE_RX);
            break;
        case NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC: m->value = mibPerSec(a, b, Q_NVLINK_TX); break;
        case NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC: m->value = mibPerSec(a, b, Q_NVLINK_RX); break;
        case NVML_GPM_METRIC_C2C_TOTAL_TX_PER_SEC:
        case NVML_GPM_METRIC_C2C_TOTAL_RX_PER_SEC:
            if (!c2c) {
                m->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
                break;
            }
            m->value = mibPerSec(a, b, m->metricId == NVML_GPM_METRIC_C2C_TOTAL_TX_PER_SEC ? Q_C2C_TX : Q_C2C_RX);
            break;
        default:
            m->nvmlReturn = m->metricId >= NVML_GPM_METRIC_MAX ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_NOT_SUPPORTED;
        }
        logCall("nvmlGpmMetricsGet %u %u %d %.6f %lld %lld", a->gpu, m->metricId, (int)m->nvmlReturn, m->value, a->tsUs, b->tsUs);
    }
    return NVML_SUCCESS;
}

#endif /* FAKE_NVML_NO_GPM */

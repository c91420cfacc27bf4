/*
 * Every other libdcgm symbol that go-dcgm v1.4611.0 references (the undefined dynamic symbols of a
 * binary importing github.com/NVIDIA/go-dcgm/pkg/dcgm, listed with `nm -D --undefined-only`; see
 * TestFakeLibraryExportsEverySymbol). These stubs deliberately do not include the DCGM headers:
 * they only need to exist so that a call the receiver should never make returns
 * DCGM_ST_NOT_SUPPORTED (-6, dcgm_structs.h) in the int return register instead of killing the
 * process with "symbol lookup error". The two that return a pointer (DcgmFieldGetById,
 * dcgmGetErrorMeta) answer NULL, which go-dcgm reads as "unknown".
 */
#define DCGM_ST_NOT_SUPPORTED (-6)
void *DcgmFieldGetById(unsigned short fieldId) { (void)fieldId; return 0; } /* unknown field: NULL */
int DcgmFieldsInit(void) { return 0; }
int DcgmFieldsTerm(void) { return 0; }
int dcgmAttachDriver(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmConnect_v3(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmCreateFakeEntities(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmDetachDriver(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmEntityGetLatestValues(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmGetCpuHierarchy(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmGetCpuHierarchy_v2(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmGetDeviceAttributes(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmGetDeviceTopology(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmGetEntityGroupEntities(void) { return DCGM_ST_NOT_SUPPORTED; }
void *dcgmGetErrorMeta(int error) { (void)error; return 0; } /* unknown error: NULL */
int dcgmGetGpuStatus(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmGetLatestValuesForFields(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmGetNvLinkP2PStatus(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmGetPidInfo(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmGroupGetInfo(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmHealthCheck(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmHealthGet(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmHealthSet(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmHostengineVersionInfo(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmInjectFieldValue(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmIntrospectGetHostengineCpuUtilization(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmIntrospectGetHostengineMemoryUsage(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmPolicyGet(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmPolicyRegister_v2(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmPolicySet(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmPolicyUnregister(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmRunDiagnostic(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmVersionInfo(void) { return DCGM_ST_NOT_SUPPORTED; }
int dcgmWatchPidFields(void) { return DCGM_ST_NOT_SUPPORTED; }

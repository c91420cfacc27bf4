// pcie_load: the device check's PCIe traffic on CUDA device 0. Copies a pinned 256 MiB buffer
// host->device and device->host (cudaMemcpy, each copy synchronous) for argv[1] seconds and prints
// "h2d_bytes d2h_bytes seconds": the bytes moved each way and the time taken.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
int main(int argc, char **argv) {
  double secs = argc > 1 ? atof(argv[1]) : 10;
  size_t n = 256u << 20;
  void *h, *d;
  if (cudaMallocHost(&h, n) != cudaSuccess || cudaMalloc(&d, n) != cudaSuccess) { fprintf(stderr, "alloc failed\n"); return 1; }
  unsigned long long up = 0, down = 0;
  auto t0 = std::chrono::steady_clock::now();
  double el = 0;
  while (el < secs) {
    cudaMemcpy(d, h, n, cudaMemcpyHostToDevice); up += n;
    cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost); down += n;
    el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  printf("%llu %llu %.3f\n", up, down, el);
  return 0;
}

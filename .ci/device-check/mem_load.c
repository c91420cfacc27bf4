// mem_load: the device check's host-memory load of known bytes (cpuuncore_grace_cmem_bytes,
// cpuuncore_xeonmax_hbm_bytes). `mem_load read|write SECONDS [MIB [THREADS]]` streams a buffer of
// MIB MiB (default 1024, far larger than any last-level cache: Grace 114 MiB, Xeon Max 112.5 MiB)
// with THREADS threads (default 4), each over its own slice, for SECONDS seconds, and prints
// "read_bytes write_bytes seconds": what it read and wrote, counted in whole 1 MiB chunks, and the
// time from the first touch of the buffer to the end.
//   read:  the buffer is written once (one pass, counted as written: it faults the pages in), then
//          summed, 8 bytes a load, pass after pass;
//   write: the buffer is stored to, pass after pass (the first pass faults the pages in).
// Ordinary loads and stores: a store may cost a read for ownership, which the check allows for
// (reads are not compared in the write window). Pin it with numactl (--cpunodebind, --membind):
// it places nothing itself. Built by the device check with `cc -O2 -pthread`.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define CHUNK (1u << 20)

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct job {
  uint64_t *p;
  size_t chunks;
  int write;
  double end;
  unsigned long long rd, wr;
  uint64_t sink;
};

static void store(uint64_t *p, uint64_t v) {
  for (size_t i = 0; i < CHUNK / 8; i++) p[i] = v + i;
}

static void *run(void *arg) {
  struct job *j = arg;
  uint64_t acc = 0;
  if (!j->write) { // fault the slice in, so that the timed passes only read
    for (size_t c = 0; c < j->chunks; c++) store(j->p + c * (CHUNK / 8), 0x5a5a5a5a5a5a5a5aull);
    j->wr += (unsigned long long)j->chunks * CHUNK;
  }
  for (uint64_t pass = 1;; pass++) {
    for (size_t c = 0; c < j->chunks; c++) {
      uint64_t *q = j->p + c * (CHUNK / 8);
      if (j->write) {
        store(q, pass);
        j->wr += CHUNK;
      } else {
        uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (size_t i = 0; i < CHUNK / 8; i += 4) { s0 += q[i]; s1 += q[i + 1]; s2 += q[i + 2]; s3 += q[i + 3]; }
        acc += s0 + s1 + s2 + s3;
        j->rd += CHUNK;
      }
      if (now() >= j->end) {
        j->sink = acc;
        return NULL;
      }
    }
  }
}

int main(int argc, char **argv) {
  if (argc < 3 || (strcmp(argv[1], "read") && strcmp(argv[1], "write"))) {
    fprintf(stderr, "usage: %s read|write SECONDS [MIB [THREADS]]\n", argv[0]);
    return 2;
  }
  int write = !strcmp(argv[1], "write");
  double secs = atof(argv[2]);
  size_t mib = argc > 3 ? strtoul(argv[3], NULL, 10) : 1024;
  int threads = argc > 4 ? atoi(argv[4]) : 4;
  if (threads < 1 || threads > 256 || mib < (size_t)threads) {
    fprintf(stderr, "mem_load: %zu MiB over %d threads: at least 1 MiB a thread\n", mib, threads);
    return 2;
  }
  size_t bytes = mib << 20;
  uint64_t *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buf == MAP_FAILED) {
    perror("mem_load: mmap");
    return 1;
  }
  struct job jobs[256];
  pthread_t tid[256];
  double t0 = now();
  size_t per = mib / threads;
  for (int i = 0; i < threads; i++) {
    jobs[i] = (struct job){.p = buf + (size_t)i * per * (CHUNK / 8), .chunks = per, .write = write, .end = t0 + secs};
    if (pthread_create(&tid[i], NULL, run, &jobs[i])) {
      perror("mem_load: pthread_create");
      return 1;
    }
  }
  unsigned long long rd = 0, wr = 0;
  uint64_t sink = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(tid[i], NULL);
    rd += jobs[i].rd;
    wr += jobs[i].wr;
    sink ^= jobs[i].sink;
  }
  printf("%llu %llu %.3f\n", rd, wr, now() - t0);
  fprintf(stderr, "mem_load: %s, %zu MiB, %d threads, checksum %llx\n", argv[1], mib, threads, (unsigned long long)sink);
  return 0;
}

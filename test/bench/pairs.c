// SPDX-License-Identifier: Apache-2.0
// pairs: interleaved-pairs timing of two commands, for scripts/bench.sh.
//
//   pairs RUNS WARMUP PREPARE BASE-COMMAND COMMAND
//
// Each pair runs BASE-COMMAND and COMMAND back to back, in a random order,
// each preceded by PREPARE (a sh -c string, untimed; "" for none). A command
// is one string split at spaces (no quoting) and run with fork + execv, timed
// from fork to wait. On a noisy VM two neighbouring runs see nearly the same
// machine, so the per-pair difference is a far steadier estimate of what
// COMMAND costs beyond BASE-COMMAND than the difference of two medians taken
// minutes apart.
//
// Prints one tab-separated line, in milliseconds:
//   median(base) median(command) median(diff) p25(diff) p75(diff) min(base) min(command)
// A command that exits non-zero stops the run with exit 1.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static char** split(const char* text) {
  char* copy = strdup(text);
  size_t n = 0, cap = 8;
  char** argv = malloc(cap * sizeof *argv);
  for (char* tok = strtok(copy, " "); tok; tok = strtok(NULL, " ")) {
    if (n + 2 > cap) argv = realloc(argv, (cap *= 2) * sizeof *argv);
    argv[n++] = tok;
  }
  argv[n] = NULL;
  return argv;
}

static int wait_ok(pid_t pid, const char* what) {
  int status = 0;
  if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "pairs: `%s` failed (status %d)\n", what, status);
    exit(1);
  }
  return 0;
}

static void prepare(const char* cmd) {
  if (!*cmd) return;
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd, (char*)NULL);
    _exit(127);
  }
  wait_ok(pid, cmd);
}

static double timed(char** argv, const char* what) {
  double start = now_ms();
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    execv(argv[0], argv);
    _exit(127);
  }
  wait_ok(pid, what);
  return now_ms() - start;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double at(double* v, int n, double q) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return v[(int)(q * (n - 1) + 0.5)];
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: pairs RUNS WARMUP PREPARE BASE-COMMAND COMMAND\n");
    return 2;
  }
  int runs = atoi(argv[1]), warmup = atoi(argv[2]);
  const char* prep = argv[3];
  char** base = split(argv[4]);
  char** cmd = split(argv[5]);
  double* b = calloc((size_t)runs, sizeof *b);
  double* c = calloc((size_t)runs, sizeof *c);
  double* d = calloc((size_t)runs, sizeof *d);
  srand((unsigned)getpid());
  for (int i = -warmup; i < runs; ++i) {
    double tb, tc;
    if (rand() & 1) {
      prepare(prep), tb = timed(base, argv[4]);
      prepare(prep), tc = timed(cmd, argv[5]);
    } else {
      prepare(prep), tc = timed(cmd, argv[5]);
      prepare(prep), tb = timed(base, argv[4]);
    }
    if (i < 0) continue;
    b[i] = tb, c[i] = tc, d[i] = tc - tb;
  }
  double mb = at(b, runs, 0.5), minb = b[0];
  double mc = at(c, runs, 0.5), minc = c[0];
  printf("%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\n", mb, mc, at(d, runs, 0.5), at(d, runs, 0.25), at(d, runs, 0.75),
         minb, minc);
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
// recording_runtime stands in for runc. With RECORD_DIR set it writes
//   argv    its arguments, each followed by a NUL byte (argv[0] included)
//   pid     its process id
//   env     its environment, NUL-separated
// then exits with $FAKE_EXIT (default 0), or raises $FAKE_SIGNAL. Without
// RECORD_DIR it just exits 0: the benchmarks' "static exit-0 runtime".
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char** environ;

static void write_file(const char* dir, const char* name, const char* data, size_t len) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  while (len > 0) {
    ssize_t n = write(fd, data, len);
    if (n <= 0) break;
    data += n;
    len -= (size_t)n;
  }
  close(fd);
}

static void write_list(const char* dir, const char* name, char** list) {
  size_t total = 0;
  for (char** p = list; *p; ++p) total += strlen(*p) + 1;
  char* buf = malloc(total + 1);
  size_t off = 0;
  for (char** p = list; *p; ++p) {
    size_t n = strlen(*p) + 1;
    memcpy(buf + off, *p, n);
    off += n;
  }
  write_file(dir, name, buf, off);
  free(buf);
}

int main(int argc, char** argv) {
  (void)argc;
  const char* dir = getenv("RECORD_DIR");
  if (!dir) return 0;
  write_list(dir, "argv", argv);
  write_list(dir, "env", environ);
  char pid[32];
  int n = snprintf(pid, sizeof pid, "%d", (int)getpid());
  write_file(dir, "pid", pid, (size_t)n);
  const char* sig = getenv("FAKE_SIGNAL");
  if (sig) {
    signal(atoi(sig), SIG_DFL);
    raise(atoi(sig));
  }
  const char* code = getenv("FAKE_EXIT");
  return code ? atoi(code) : 0;
}

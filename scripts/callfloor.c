// The floor of a supervised call on this machine: what a seccomp user notification costs with a
// supervisor that checks nothing at all. Each of create (open O_CREAT|O_EXCL, the supervisor
// makes the file and installs it with SECCOMP_IOCTL_NOTIF_ADDFD, as wavebox does) and unlink
// (the supervisor removes the name and answers) is made N times in a scratch directory:
// first by the process itself, then under a filter whose listener a minimal supervisor answers.
// Built and run by scripts/callfloor; no part of wavebox.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

// The calls under test, in dir (a child of the current directory); prints their cost.
static void work(const char* label, const char* dir, int n) {
  char name[256];
  double t0 = seconds();
  for (int i = 0; i < n; i++) {
    snprintf(name, sizeof name, "%s/f%d", dir, i);
    int fd = openat(AT_FDCWD, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      perror("create");
      _exit(1);
    }
    close(fd);
  }
  double t1 = seconds();
  int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  for (int i = 0; i < n; i++) {
    snprintf(name, sizeof name, "f%d", i);
    if (unlinkat(d, name, 0) != 0) {
      perror("unlink");
      _exit(1);
    }
  }
  double t2 = seconds();
  close(d);
  printf("%-22s create %6.1f us   unlink %6.1f us\n", label, (t1 - t0) * 1e6 / n, (t2 - t1) * 1e6 / n);
  fflush(stdout);
}

// Answers the child's notifications until it is gone: opens under dir are made here and handed
// over, unlinks performed here, anything else continued.
static void supervise(pid_t child, int listener, const char* dir) {
  int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  size_t dlen = strlen(dir);
  for (;;) {
    struct seccomp_notif req;
    memset(&req, 0, sizeof req);
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) {
      if (errno == EINTR) continue;
      return;  // the child is gone
    }
    char path[256] = {0};
    struct iovec local = {path, sizeof path - 1}, remote = {(void*)req.data.args[1], sizeof path - 1};
    process_vm_readv(child, &local, 1, &remote, 1, 0);
    struct seccomp_notif_resp resp;
    memset(&resp, 0, sizeof resp);
    resp.id = req.id;
    if (req.data.nr == __NR_openat && strncmp(path, dir, dlen) == 0 && path[dlen] == '/') {
      int fd = openat(dfd, path + dlen + 1, (int)req.data.args[2] | O_CLOEXEC, (mode_t)req.data.args[3]);
      if (fd >= 0) {
        struct seccomp_notif_addfd add;
        memset(&add, 0, sizeof add);
        add.id = req.id;
        add.flags = SECCOMP_ADDFD_FLAG_SEND;
        add.srcfd = (unsigned)fd;
        ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add);
        close(fd);
        continue;
      }
      resp.error = -errno;
    } else if (req.data.nr == __NR_unlinkat) {
      if (unlinkat(dfd, path, 0) != 0) resp.error = -errno;
    } else {
      resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    }
    ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
  }
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 5000;
  char dir[64];
  snprintf(dir, sizeof dir, "callfloor.%d", (int)getpid());
  if (mkdir(dir, 0755) != 0) {
    perror("mkdir");
    return 1;
  }
  work("by the process itself", dir, n);

  int pipefd[2];
  if (pipe(pipefd) != 0) return 1;
  pid_t child = fork();
  if (child == 0) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_unlinkat, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    int listener = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    if (write(pipefd[1], &listener, sizeof listener) != sizeof listener) _exit(1);
    usleep(100000);  // the parent takes the listener meanwhile
    work("by a supervisor", dir, n);
    _exit(0);
  }
  int their = -1;
  if (read(pipefd[0], &their, sizeof their) != sizeof their || their < 0) return 1;
  int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
  int listener = (int)syscall(SYS_pidfd_getfd, pidfd, their, 0);
  if (listener < 0) {
    perror("pidfd_getfd");
    return 1;
  }
  // As wavebox: the notifier hands its CPU straight to the supervisor (Linux 6.7; older: EINVAL).
  (void)ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, 1ULL);
  supervise(child, listener, dir);
  waitpid(child, NULL, 0);
  rmdir(dir);
  return 0;
}

/* without_mount_api COMMAND [ARG...]: runs COMMAND where the new mount API (open_tree,
 * move_mount, mount_setattr, fsopen, fsmount) answers ENOSYS, as on an older kernel or under a
 * container's seccomp policy. For the test that wavebox then leaves every mount to bwrap. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#else
#error "add this architecture"
#endif

#define DENY(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS)

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: without_mount_api COMMAND [ARG...]\n");
    return 2;
  }
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      DENY(SYS_open_tree),
      DENY(SYS_move_mount),
      DENY(SYS_mount_setattr),
      DENY(SYS_fsopen),
      DENY(SYS_fsmount),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    perror("without_mount_api: seccomp");
    return 125;
  }
  execvp(argv[1], argv + 1);
  perror("without_mount_api: exec");
  return 127;
}

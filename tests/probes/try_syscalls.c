/* Calls each syscall wavebox's filter cares about, with harmless (mostly invalid) arguments, and
 * prints "name errno" (0 = the call succeeded). Run inside and outside the filter, the output
 * shows what the filter refuses and what it lets through. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void report(const char* name, long rc) {
  printf("%s %d\n", name, rc < 0 ? errno : 0);
  fflush(stdout);
}

static long sock(long family, long type) {
  long fd = syscall(SYS_socket, family, type, 0L);
  int e = errno;
  if (fd >= 0) close((int)fd);
  errno = e;
  return fd;
}

int main(void) {
  report("socket_unix", sock(AF_UNIX, SOCK_STREAM));
  report("socket_unix_highbits", sock(0x100000000L | AF_UNIX, SOCK_STREAM));
  report("socket_unix_dgram", sock(AF_UNIX, SOCK_DGRAM));
  report("socket_unix_dgram_highbits", sock(0x100000000L | AF_UNIX, 0x100000000L | SOCK_DGRAM));
  report("openat2", syscall(SYS_openat2, AT_FDCWD, "/", NULL, 0));
  report("fchmodat2", syscall(452 /* fchmodat2 */, AT_FDCWD, ".", 0755, 0));
  report("setxattr", syscall(SYS_setxattr, ".", "user.x", "1", 1, 0));
  report("setxattrat",
         syscall(463 /* setxattrat, newer than the filter's libseccomp */, AT_FDCWD, ".", 0, "user.x", NULL, 0));
  report("call_599", syscall(599));
  {
    int fd = open(".", O_RDONLY | O_DIRECTORY);
    report("fchmod_setuid", syscall(SYS_fchmod, fd, 04755));
    report("fchmod_setgid", syscall(SYS_fchmod, fd, 02755));
    close(fd);
  }
  report("socket_packet", sock(AF_PACKET, SOCK_RAW));
  report("socket_bluetooth", sock(31, SOCK_STREAM));
  report("socket_family_999", sock(999, SOCK_STREAM));
  report("socket_inet", sock(AF_INET, SOCK_STREAM));
  report("socket_inet6", sock(AF_INET6, SOCK_STREAM));
  report("socket_netlink", sock(AF_NETLINK, SOCK_RAW));
  int sv[2];
  long rc = syscall(SYS_socketpair, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv);
  report("socketpair_unix_dgram", rc);
  rc = syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, sv);
  report("socketpair_unix_stream", rc);
  report("io_uring_setup", syscall(SYS_io_uring_setup, 0, NULL));
  report("ptrace", syscall(SYS_ptrace, 0x4200 /* PTRACE_SEIZE */, getppid(), 0, 0));
  report("process_vm_readv", syscall(SYS_process_vm_readv, getppid(), NULL, 0, NULL, 0, 0));
  /* Another process's descriptors (pid 1 is wavebox-shim, whose socket reaches wavebox). */
  long pidfd = syscall(SYS_pidfd_open, 1, 0);
  report("pidfd_getfd", syscall(SYS_pidfd_getfd, pidfd < 0 ? 0 : pidfd, 0, 0));
  report("unshare_newuser", syscall(SYS_unshare, CLONE_NEWUSER));
  report("unshare_newuser_highbits", syscall(SYS_unshare, 0x100000000L | CLONE_NEWUSER));
  report("clone3", syscall(SYS_clone3, NULL, 0));
  report("mount", syscall(SYS_mount, "none", "/tmp", "tmpfs", 0, NULL));
  report("umount2", syscall(SYS_umount2, "/proc", 0));
  report("pivot_root", syscall(SYS_pivot_root, "/", "/"));
  report("chroot", syscall(SYS_chroot, "/"));
  report("setns", syscall(SYS_setns, -1, 0));
  report("open_tree", syscall(SYS_open_tree, -1, "/", 0));
  report("fsopen", syscall(SYS_fsopen, "tmpfs", 0));
  report("mount_setattr", syscall(SYS_mount_setattr, -1, "", 0, NULL, 0));
  report("ioctl_tiocsti", syscall(SYS_ioctl, 0, TIOCSTI, "x"));
  report("ioctl_tiocsti_highbits", syscall(SYS_ioctl, 0, 0x100000000L | TIOCSTI, "x"));
  report("keyctl", syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -1, 0));
  report("add_key", syscall(SYS_add_key, "user", "wb", "x", 1, -1));
  report("bpf", syscall(SYS_bpf, 0, NULL, 0));
  report("perf_event_open", syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
  report("userfaultfd", syscall(SYS_userfaultfd, 0));
  report("open_by_handle_at", syscall(SYS_open_by_handle_at, -1, NULL, 0));
  report("kexec_load", syscall(SYS_kexec_load, 0, 0, NULL, 0));
  /* What must keep working. */
  pid_t pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
  if (pid == 0) _exit(0);
  if (pid > 0) waitpid(pid, NULL, 0);
  report("clone_plain", pid);
  long mfd = syscall(SYS_memfd_create, "probe", 0);
  report("memfd_create", mfd);
  /* execveat with a bad fd fails in the kernel (ENOENT/EBADF), not in the filter (EPERM/ENOSYS). */
  rc = syscall(SYS_execveat, -1, "", NULL, NULL, 0);
  errno = (rc < 0 && (errno == EPERM || errno == ENOSYS)) ? errno : 0;
  report("execveat_bad_fd", errno ? -1 : 0);
  report("prctl", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) < 0 ? -1 : 0);
  report("ioctl_tiocgwinsz", syscall(SYS_ioctl, 0, TIOCGWINSZ, &(char[64]){0}) < 0 && errno == ENOTTY ? 0 : 0);
  return 0;
}

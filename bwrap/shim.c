/* wavebox-shim: pid 1 of the sandbox (bwrap --as-pid-1). It arms its parent-death signal, so
 * the sandbox dies with bwrap (and bwrap with wavebox) from the first instruction on; installs
 * the observer filter (a BPF program wavebox compiled, read from BPF_FD) with a
 * user-notification listener; hands the listener to wavebox over SOCK_FD and waits for its
 * acknowledgement (no answer: wavebox is gone, nothing runs); then starts the command in a
 * process group of its own and reaps until it exits, passing its status on. The observer only
 * reports: every notified call is continued, the mounts and the main filter decide.
 *
 *   wavebox-shim BPF_FD SOCK_FD COMMAND [ARG...]
 *
 * Small and static on purpose: it runs once per command. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int die(const char* what) {
  fprintf(stderr, "wavebox: error: observer: %s: %s\n", what, strerror(errno));
  return 125;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "wavebox-shim: usage: wavebox-shim BPF_FD SOCK_FD COMMAND [ARG...]\n");
    return 125;
  }
  /* From here on, bwrap's death (which follows wavebox's) kills us, and with pid 1 the sandbox. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return die("parent-death signal");
  int bpf_fd = atoi(argv[1]);
  int sock_fd = atoi(argv[2]);
  struct sock_filter prog_buf[4096];
  size_t got = 0;
  for (;;) {
    ssize_t n = read(bpf_fd, (char*)prog_buf + got, sizeof prog_buf - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return die("reading the filter");
    if (n == 0) break;
    got += (size_t)n;
    if (got == sizeof prog_buf) break;
  }
  close(bpf_fd);
  if (got == 0 || got % sizeof(struct sock_filter) != 0) {
    errno = EINVAL;
    return die("the filter");
  }
  struct sock_fprog prog = {(unsigned short)(got / sizeof(struct sock_filter)), prog_buf};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return die("no_new_privs");
  int listener = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
  if (listener < 0) return die("installing the filter");

  char byte = 'L';
  struct iovec iov = {&byte, 1};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } ctl;
  memset(&ctl, 0, sizeof ctl);
  struct msghdr msg = {0};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = ctl.buf;
  msg.msg_controllen = sizeof ctl.buf;
  struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &listener, sizeof(int));
  while (sendmsg(sock_fd, &msg, 0) < 0) {
    if (errno != EINTR) return die("handing the listener out");
  }
  close(listener);
  /* wavebox answers once it holds the listener: proof that it was alive after our signal was
   * armed. EOF instead means it died: then nothing may run. */
  char ack = 0;
  ssize_t ack_got;
  do {
    ack_got = read(sock_fd, &ack, 1);
  } while (ack_got < 0 && errno == EINTR);
  if (ack_got != 1) return 125;
  close(sock_fd);

  pid_t child = fork();
  if (child < 0) return die("fork");
  if (child == 0) {
    /* A process group of its own: wavebox forwards terminal signals to it. */
    setpgid(0, 0);
    execvp(argv[3], argv + 3);
    int err = errno;
    fprintf(stderr, "wavebox: %s: %s\n", argv[3], err == ENOENT ? "command not found" : strerror(err));
    _exit(err == ENOENT ? 127 : 126);
  }
  /* As init: reap everything; when the command ends, so does the sandbox (the kernel kills what
   * is left in the pid namespace when pid 1 exits). */
  for (;;) {
    int st;
    pid_t p = wait(&st);
    if (p < 0 && errno == EINTR) continue;
    if (p < 0) return 125;
    if (p == child) {
      if (WIFEXITED(st)) return WEXITSTATUS(st);
      if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    }
  }
}

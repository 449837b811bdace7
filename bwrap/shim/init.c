/* wavebox-shim: the small static helper wavebox starts instead of forking itself, so the
 * processes that live for the whole run cost next to no memory. Two roles: the keeper
 * (`wavebox-shim keeper ...`, keeper.c), and this one:
 *
 *   wavebox-shim FILTER_FD SOCK_FD SPEC_FD MOUNTS_FD
 *     SPEC_FD holds LIMITS, EXE, COMMAND and its arguments (NUL-terminated fields; the command
 *     line was fixed before the run was planned). MOUNTS_FD and FILTER_FD are read once wavebox
 *     sends 'M' on SOCK_FD (bwrap may run us before the plan is made). EXE is where wavebox
 *     found COMMAND on PATH
 *     ("-": search PATH here).
 *     LIMITS is "CPU_SECONDS:PROCESSES:MEMORY_MB" (0 = none), set as RLIMIT_CPU, RLIMIT_NPROC
 *     (counted per user namespace since Linux 5.14, so it bounds the sandbox's own processes)
 *     and RLIMIT_AS on the command.
 *     pid 1 of bwrap's namespace (bwrap --as-pid-1): arms its parent-death signal; places the
 *     mounts listed in MOUNTS_FD (bwrap/plan/plan.hpp, render_shim_mounts: all of them, /proc and
 *     /dev included, with the new mount API, in bwrap's mount namespace, after forbidding new
 *     user namespaces; or, where bwrap placed them, only re-mounts the device nodes read-only,
 *     in a mount namespace of its own), checks what must be read-only is, and enters its
 *     working directory again; drops every capability (bounding and ambient sets
 *     included) and checks that none is left; loads the seccomp program of FILTER_FD (bwrap was
 *     not given it), which refuses some calls and reports others, with a user-notification
 *     listener, hands the listener to wavebox over SOCK_FD and waits for its acknowledgement
 *     (no answer: wavebox is gone, nothing runs), then starts the command in a process group of
 *     its own and reaps until it exits, passing its status on. Any failing step exits 125
 *     before the command runs. wavebox answers the calls the program notifies
 *     (bwrap/supervise/). */
#include "bwrap/shim/shim.h"

/* Waits for one of wavebox's words: WANT ('M' to start, 'G' for a standby's command), a byte
 * saying which of the command's standard descriptors come with it (bit i: descriptor i; and
 * WB_START_STANDBY), with 'G' first the go spec's descriptor (*spec), then those descriptors,
 * which replace ours (bwrap's /dev/null and its message pipe); one not sent is closed, as it was
 * for wavebox. A standby's 'M' carries none and changes none: they come with 'G'. Anything else,
 * or the end of the socket, and nothing is placed and nothing runs. The receiving half is
 * core/sys/fdpass.cpp's recv_fds again, in C (this static program links no C++ library), with
 * the checks these messages need. */
static int receive_word(int sock, char want, int* standby, int* spec, int* tty) {
  char word[2];
  union {
    char buf[CMSG_SPACE(sizeof(int) * 4)];
    struct cmsghdr align;
  } ctl;
  struct iovec iov = {word, sizeof word};
  struct msghdr msg;
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = ctl.buf;
  msg.msg_controllen = sizeof ctl.buf;
  ssize_t n;
  do {
    n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL);
  } while (n < 0 && errno == EINTR);
  int fds[4] = {-1, -1, -1, -1};
  int got = 0;
  struct cmsghdr* c = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL;
  if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
    got = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    if (got > 4) got = 4;
    memcpy(fds, CMSG_DATA(c), sizeof(int) * (size_t)got);
  }
  const int is_go = want == WB_WORD_GO;
  int want_fds = is_go;
  for (int i = 0; i < 3; ++i) want_fds += (word[1] >> i) & 1;
  const int standby_start = !is_go && (word[1] & WB_START_STANDBY);
  if (n != (ssize_t)sizeof word || word[0] != want || (msg.msg_flags & MSG_CTRUNC) || got != want_fds ||
      (word[1] & ~(0x07 | WB_START_STANDBY | WB_START_TTY)) || (is_go && (word[1] & WB_START_STANDBY)) ||
      (standby_start && want_fds != 0)) {
    for (int i = 0; i < got; ++i) close(fds[i]);
    return -1;
  }
  if (standby) *standby = standby_start;
  if (tty) *tty = (word[1] & WB_START_TTY) != 0;
  if (standby_start) return 0;
  int next = is_go;
  for (int i = 0; i < 3; ++i) {
    if (!((word[1] >> i) & 1)) {
      close(i);
    } else if (dup2(fds[next++], i) != i) {
      return -1;
    }
  }
  for (int i = is_go; i < got; ++i) close(fds[i]);
  if (is_go) *spec = fds[0];
  return 0;
}

/* No capability may reach the command: bounding, ambient, permitted, effective, inheritable. */
static int drop_capabilities(void) {
  unsigned long long dropped = 0; /* a capability absent from the bounding set cannot come back */
  for (int c = 0; c < 64; ++c) {
    int held = prctl(PR_CAPBSET_READ, c, 0, 0, 0);
    if (held < 0) break; /* beyond the last capability */
    if (held == 1) {
      if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0) return die("dropping the capability bounding set");
      dropped |= 1ULL << c;
    }
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    return die("clearing the ambient capabilities");
  }
  struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2];
  memset(d, 0, sizeof d);
  if (syscall(SYS_capset, &h, d) != 0) return die("dropping the capabilities");
  memset(d, 0xff, sizeof d);
  if (syscall(SYS_capget, &h, d) != 0) return die("reading the capabilities back");
  for (int i = 0; i < 2; ++i) {
    if (d[i].effective || d[i].permitted || d[i].inheritable) {
      errno = EPERM;
      return die("a capability is still held");
    }
  }
  for (int c = 0; c < 64; ++c) {
    if (!(dropped & (1ULL << c))) continue;
    if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) != 0) {
      errno = EPERM;
      return die("a capability is still in the bounding set");
    }
  }
  return 0;
}

static int load_filter(int fd, unsigned flags, int* listener) {
  size_t len = 0;
  char* buf = read_all(fd, &len);
  close(fd);
  if (!buf || len == 0 || len % sizeof(struct sock_filter) != 0 || len / sizeof(struct sock_filter) > 65535) {
    errno = EINVAL;
    return -1;
  }
  struct sock_fprog prog = {(unsigned short)(len / sizeof(struct sock_filter)), (struct sock_filter*)buf};
  long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
  free(buf);
  if (r < 0) return -1;
  if (listener) *listener = (int)r;
  return 0;
}

/* Waits for `child` while reaping anything else; returns the status to pass on. */
/* Reaps until the command ends; its status. stops >= 0: the command stopping is said there (it
 * has a terminal of its own, whose Ctrl-Z stopped it: wavebox stops too, and resumes it). */
static int reap_until(pid_t child, int stops) {
  for (;;) {
    int st;
    pid_t p = waitpid(-1, &st, stops >= 0 ? WUNTRACED : 0);
    if (p < 0 && errno == EINTR) continue;
    if (p < 0) return 125;
    if (p == child && WIFSTOPPED(st)) {
      unsigned char msg[2] = {WB_WORD_STOPPED, (unsigned char)WSTOPSIG(st)};
      (void)!write(stops, msg, sizeof msg);
      continue;
    }
    if (p == child) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
}

static volatile sig_atomic_t g_reap_expired;
static void on_reap_alarm(int sig) {
  (void)sig;
  g_reap_expired = 1;
}

/* As pid 1, ends what the command left running and reaps it all: every process of this pid
 * namespace has our uid and no capability, so SIGKILL reaches each, and one that forks meanwhile
 * either is reached too or fails to fork. 1 once no child is left (the namespace holds only us);
 * 0 if that took over two seconds (a process stuck in the kernel, or one we could not signal):
 * then our exit leaves the rest to the kernel, as always. */
static int empty_namespace(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_reap_alarm; /* no SA_RESTART: wait() returns EINTR */
  if (sigaction(SIGALRM, &sa, NULL) != 0) return 0;
  kill(-1, SIGKILL);
  alarm(2);
  for (;;) {
    pid_t p = wait(NULL);
    if (p > 0) continue;
    if (errno == EINTR && !g_reap_expired) continue;
    break;
  }
  int emptied = errno == ECHILD && !g_reap_expired;
  alarm(0);
  return emptied;
}

/* The command line wavebox gave bwrap was fixed before the run was planned; the rest comes in
 * SPEC_FD: LIMITS, EXE, COMMAND, ARG... as NUL-terminated fields. Returns the argument vector
 * the rest reads: FILTER_FD SOCK_FD LIMITS MOUNTS_FD EXE COMMAND [ARG...] (NULL on error). */
static char** read_spec(char** argv) {
  int fd = atoi(argv[3]);
  size_t len = 0;
  char* buf = read_all(fd, &len);
  close(fd);
  if (!buf) return NULL;
  int fields = wb_spec_fields(buf, len);
  if (fields < 0) return NULL;
  char** av = calloc((size_t)fields + 4, sizeof *av);
  if (!av) return NULL;
  av[0] = argv[0];
  av[1] = argv[1];
  av[2] = argv[2];
  av[4] = argv[4];
  char* p = buf;
  av[3] = p;
  p += strlen(p) + 1;
  size_t n = 5;
  for (; p < buf + len; p += strlen(p) + 1) av[n++] = p;
  av[n] = NULL;
  return av;
}

/* A standby's command (the go spec, bwrap/shim/wire.h): the same argv layout as read_spec's,
 * with where to run it and its environment. */
static char** read_go_spec(char** args, int fd, const char** cwd, char*** envp) {
  size_t len = 0;
  char* buf = read_all(fd, &len);
  close(fd);
  int nenv = 0;
  if (!buf || wb_go_spec(buf, len, &nenv) != 0) return NULL;
  char* f[4];
  char* p = buf;
  for (int i = 0; i < 4; ++i) {
    f[i] = p;
    p += strlen(p) + 1;
  }
  char** env = calloc((size_t)nenv + 1, sizeof *env);
  char** av = calloc(len + 7, sizeof *av);
  if (!env || !av) return NULL;
  for (int i = 0; i < nenv; ++i) {
    env[i] = p;
    p += strlen(p) + 1;
  }
  av[0] = args[0];
  av[1] = args[1];
  av[2] = args[2];
  av[3] = f[0];
  av[4] = args[4];
  av[5] = f[1];
  size_t n = 6;
  for (; p < buf + len; p += strlen(p) + 1) av[n++] = p;
  av[n] = NULL;
  *cwd = f[2];
  *envp = env;
  return av;
}

/* No capabilities, no new privileges, the filter loaded with its listener, and the listener (and
 * the FUSE masks' connections) handed to wavebox, which must answer. 0, or an exit status. */
static int lock_down_and_hand_over(int filter_fd, int sock_fd) {
  if (drop_capabilities() != 0) return 125;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return die("no_new_privs");
  /* One program refuses and reports (bwrap was not given it: its mount calls would have been
   * refused): loaded with a notification listener. */
  int listener_fd = -1;
  if (load_filter(filter_fd, SECCOMP_FILTER_FLAG_NEW_LISTENER, &listener_fd) != 0)
    return die("loading the seccomp filter");
  /* The listener, then the FUSE masks' connections; a byte per FUSE record says which. */
  int fds[1 + WB_MAX_FUSE_MASKS];
  char word[1 + WB_MAX_FUSE_MASKS];
  fds[0] = listener_fd;
  word[0] = WB_WORD_LISTENERS;
  memcpy(fds + 1, fuse_served, sizeof(int) * (size_t)n_fuse_served);
  memcpy(word + 1, fuse_flags, (size_t)n_fuse_records);
  if (send_fds(sock_fd, fds, 1 + n_fuse_served, word, 1 + (size_t)n_fuse_records) != 0) {
    if (errno == EPIPE || errno == ECONNRESET) return 125; /* wavebox is gone: nothing to say */
    return die("handing the listener out");
  }
  close(listener_fd);
  for (int i = 0; i < n_fuse_served; ++i) close(fuse_served[i]);
  /* wavebox answers once it holds the listener: proof that it was alive after our signal was
   * armed. EOF instead means it died: then nothing may run. */
  char ack = 0;
  ssize_t ack_got;
  do {
    ack_got = read(sock_fd, &ack, 1);
  } while (ack_got < 0 && errno == EINTR);
  if (ack_got != 1) return 125;
  /* The socket stays ours, to say when the sandbox is empty (below). The command cannot take it:
   * not across exec, and not from us (not dumpable: pidfd_getfd and /proc/1/fd need ptrace's
   * access, which a process without capabilities lacks to a non-dumpable one; the seccomp
   * program refuses pidfd_getfd too). */
  if (fcntl(sock_fd, F_SETFD, FD_CLOEXEC) != 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    return die("keeping the socket to wavebox");
  }
  return 0;
}

/* The command, in a child of ours (we stay pid 1): its process group, the terminal's foreground,
 * its limits, then exec. Returns the child's pid, or -1 when fork failed. */
static pid_t start_command(char** argv, const struct wb_limits* limits, int tty) {
  const struct wb_limits lim = *limits;
  pid_t child = fork();
  if (child != 0) return child;
  /* A process group of its own: wavebox forwards terminal signals to it. */
  setpgid(0, 0);
  if (tty) {
    signal(SIGTTOU, SIG_IGN); /* (a group not yet in the foreground may take it) */
    if (tcsetpgrp(0, getpid()) != 0) _exit(die("the terminal's foreground"));
    signal(SIGTTOU, SIG_DFL);
  }
  struct rlimit r;
  if (lim.cpu_seconds) {
    r.rlim_cur = r.rlim_max = lim.cpu_seconds;
    if (setrlimit(RLIMIT_CPU, &r) != 0) _exit(die("RLIMIT_CPU"));
  }
  if (lim.processes) {
    r.rlim_cur = r.rlim_max = lim.processes;
    if (setrlimit(RLIMIT_NPROC, &r) != 0) _exit(die("RLIMIT_NPROC"));
  }
  if (lim.memory_mb) {
    r.rlim_cur = r.rlim_max = lim.memory_mb * 1024 * 1024;
    if (setrlimit(RLIMIT_AS, &r) != 0) _exit(die("RLIMIT_AS"));
  }
  /* wavebox found the command on PATH already (the sandbox sees the same PATH and files):
   * no failed exec per PATH entry before it. Any failure leaves it to execvp, as before. */
  const char* file = strcmp(argv[5], "-") != 0 ? argv[5] : argv[6];
  if (file != argv[6]) execv(file, argv + 6);
  execvp(argv[6], argv + 6);
  int err = errno;
  if (err == ENOEXEC) {
    /* An executable text without "#!": a shell runs it, as execvp(3) does in glibc and as
     * shells do (musl's execvp leaves it to the caller). */
    int n = 0;
    while (argv[6 + n]) ++n;
    char** sh = calloc((size_t)n + 2, sizeof *sh);
    if (sh) {
      sh[0] = "sh";
      sh[1] = (char*)file;
      for (int i = 1; i < n; ++i) sh[i + 1] = argv[6 + i];
      execv("/bin/sh", sh);
    }
    err = ENOEXEC;
  }
  fprintf(stderr, "wavebox: %s: %s\n", argv[6], err == ENOENT ? "command not found" : strerror(err));
  _exit(err == ENOENT ? 127 : 126);
}

static int observed_init(char** args) {
  /* From here on, bwrap's death (which follows wavebox's) kills us, and with pid 1 the sandbox. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return die("parent-death signal");
  char** argv = read_spec(args);
  if (!argv) return errno = EINVAL, die("reading the command");
  int filter_fd = atoi(argv[1]);
  int sock_fd = atoi(argv[2]);
  int mounts_fd = atoi(argv[4]);
  /* bwrap may have run us before the sandbox was planned: the mount list (and the filter) are
   * ready when wavebox sends 'M'. Anything else, or its end of the socket closing (wavebox gave
   * up, or died), and nothing is placed and nothing runs. */
  int standby = 0, spec_fd = -1, tty = 0;
  if (receive_word(sock_fd, WB_WORD_START, &standby, NULL, &tty) != 0) return 125;
  if (place_all_mounts(mounts_fd) != 0) return 125;
  if (lock_down_and_hand_over(filter_fd, sock_fd) != 0) return 125;
  if (standby) {
    /* Made ahead (serve): the command, its directory and environment come now, or never. */
    if (receive_word(sock_fd, WB_WORD_GO, NULL, &spec_fd, NULL) != 0) return 125;
    const char* cwd = NULL;
    char** envp = NULL;
    argv = read_go_spec(argv, spec_fd, &cwd, &envp);
    if (!argv) return errno = EINVAL, die("reading the command");
    /* "": where bwrap put us, the standby's own directory (chdir is a reported call: not made
     * for nothing). */
    if (*cwd && chdir(cwd) != 0) {
      fprintf(stderr, "wavebox: cannot enter \"%s\" in the sandbox: %s\n", cwd, strerror(errno));
      return 125;
    }
    environ = envp;
  }

  struct wb_limits lim;
  if (wb_parse_limits(argv[3], &lim) != 0) {
    errno = EINVAL;
    return die("the resource limits");
  }
  /* A terminal of the sandbox's own: ours (we lead bwrap's new session) as the controlling
   * terminal, the command's process group in the foreground. Its parent (us) in the same session
   * keeps that group from being orphaned, so the terminal's Ctrl-Z stops it (and bash's jobs
   * inside), and we see it stop. */
  if (tty && ioctl(0, TIOCSCTTY, 0) != 0) return die("taking the terminal");
  pid_t child = start_command(argv, &lim, tty);
  if (child < 0) return die("fork");
  /* As init: reap everything; when the command ends, so does the sandbox. */
  int status = reap_until(child, tty ? sock_fd : -1);
  /* Our output is the command's: let go of it, so a caller reading it sees its end now. Then,
   * with nothing of the sandbox left, tell wavebox and its status: wavebox can put the host back
   * in order (the stubs) and exit while the kernel tears the namespaces down behind us. */
  close(0); /* (not /dev/null: opening it for writing would be a notified call, for nothing) */
  close(1);
  close(2);
  /* (Only pid 1 is every orphan's reaper, so only then does "no child left" mean empty.) */
  if (getpid() == 1 && empty_namespace()) {
    unsigned char msg[2] = {WB_WORD_END, (unsigned char)status};
    (void)!write(sock_fd, msg, sizeof msg);
  }
  return status;
}

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "keeper") == 0) return wb_keeper(argc, argv);
  if (argc != 5) {
    fprintf(stderr, "wavebox-shim: usage: wavebox-shim FILTER_FD SOCK_FD SPEC_FD MOUNTS_FD\n");
    return 125;
  }
  return observed_init(argv);
}

/* wavebox-shim: the small static helper wavebox starts instead of forking itself, so the
 * processes that live for the whole run cost next to no memory. Two roles, and the first forks:
 *
 *   wavebox-shim keeper PARENT_PID UID GID SOCK_FD ERR_FD BWRAP [ARG...]
 *     Dies with wavebox (parent-death signal armed, then the parent checked). Creates the
 *     sandbox's user + network + pid namespace; starts bwrap at once as pid 1 of that namespace
 *     (bwrap then waits for its arguments, which wavebox writes into a pipe before or after
 *     planning, see bwrap/launch/exec.hpp); meanwhile raises lo, binds the proxy's listeners
 *     (127.0.0.1:3128, 127.0.0.1:1080) and sends them over SOCK_FD, sends bwrap's pid, and
 *     passes its exit status on.
 *     A failing step is reported on ERR_FD as {step, errno}.
 *   (forked by the keeper): pid 1 of that pid namespace, armed likewise, execs bwrap, which
 *     stays pid 1 there: when it dies, the kernel ends every process of the namespace and below.
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
 *     before the command runs. The observer only reports: every notified call is continued;
 *     the mounts and the refusals of the same program decide. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/fuse.h>
#include <linux/mount.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wire.h"

static int die(const char* what) {
  fprintf(stderr, "wavebox: error: observer: %s: %s\n", what, strerror(errno));
  return 125;
}

/* The keeper's bwrap, once forked: a step failing after that (wavebox gone or dropping the
 * launch: its socket's end) ends bwrap and waits for it, so nothing of the launch is left to the
 * system to reap. */
static pid_t g_bwrap = 0;

static void fail_step(int errfd, int step) {
  struct wb_keeper_error e = {step, errno};
  (void)!write(errfd, &e, sizeof e);
  if (g_bwrap > 0) {
    kill(g_bwrap, SIGKILL);
    while (waitpid(g_bwrap, NULL, 0) < 0 && errno == EINTR) {
    }
  }
  _exit(127);
}

/* Exactly n bytes from fd: 0, or -1 at an error or the end of file before them. */
static int read_full(int fd, void* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, (char*)buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    got += (size_t)r;
  }
  return 0;
}

static int write_file(const char* path, const char* data) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = write(fd, data, strlen(data));
  close(fd);
  return n == (ssize_t)strlen(data) ? 0 : -1;
}

static int listener(int port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(s, (struct sockaddr*)&a, sizeof a) != 0 || listen(s, 1024) != 0) return -1;
  return s;
}

/* A socket on PORT of every address of the namespace: IPv6 accepting IPv4 too, or IPv4 alone
 * where the namespace has no IPv6. */
static int any_address(int type, int port) {
  int s = socket(AF_INET6, type | SOCK_CLOEXEC, 0);
  int one = 1, zero = 0;
  if (s >= 0) {
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    struct sockaddr_in6 a6;
    memset(&a6, 0, sizeof a6);
    a6.sin6_family = AF_INET6;
    a6.sin6_port = htons((unsigned short)port);
    if (bind(s, (struct sockaddr*)&a6, sizeof a6) == 0 && (type != SOCK_STREAM || listen(s, 1024) == 0)) return s;
    close(s);
  }
  s = socket(AF_INET, type | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  if (bind(s, (struct sockaddr*)&a, sizeof a) != 0 || (type == SOCK_STREAM && listen(s, 1024) != 0)) {
    close(s);
    return -1;
  }
  return s;
}

/* An IPv4 address (network order) as a /32 of this namespace's loopback (netlink; the keeper
 * holds the namespace's capabilities). A best effort: one that cannot be added is not there. */
static void add_loopback_address(int nl, struct in_addr in, unsigned seq) {
  if ((ntohl(in.s_addr) >> 24) == 127) return; /* loopback is there already */
  struct {
    struct nlmsghdr nh;
    struct ifaddrmsg ifa;
    char attrs[64];
  } req;
  memset(&req, 0, sizeof req);
  req.nh.nlmsg_type = RTM_NEWADDR;
  req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE | NLM_F_ACK;
  req.nh.nlmsg_seq = seq;
  req.ifa.ifa_family = AF_INET;
  req.ifa.ifa_prefixlen = 32;
  req.ifa.ifa_scope = RT_SCOPE_HOST;
  req.ifa.ifa_index = if_nametoindex("lo");
  size_t len = NLMSG_LENGTH(sizeof(struct ifaddrmsg));
  int types[2] = {IFA_LOCAL, IFA_ADDRESS};
  for (int i = 0; i < 2; ++i) {
    struct rtattr* ra = (struct rtattr*)((char*)&req + NLMSG_ALIGN(len));
    ra->rta_type = (unsigned short)types[i];
    ra->rta_len = RTA_LENGTH(4);
    memcpy(RTA_DATA(ra), &in, 4);
    len = NLMSG_ALIGN(len) + RTA_ALIGN(ra->rta_len);
  }
  req.nh.nlmsg_len = (unsigned)len;
  if (send(nl, &req, len, 0) == (ssize_t)len) {
    char ack[256];
    (void)!recv(nl, ack, sizeof ack, 0);
  }
}

/* The addresses this namespace answers on besides loopback: the nameservers the host's
 * /etc/resolv.conf names (a client that reads the file itself, Go, c-ares, dig, sends its queries
 * there, and they reach the namespace's own resolver on port 53 of every address), and the IPv4
 * literals the allowlist names (WB_ENV_TCP_ADDRS: a direct connection to one reaches the proxy's
 * transparent listeners, which decide it as the proxy would). */
static void add_local_addresses(void) {
  int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (nl < 0) return;
  unsigned seq = 1;
  FILE* f = fopen("/etc/resolv.conf", "re");
  char line[512];
  while (f && fgets(line, sizeof line, f)) {
    char addr[64];
    struct in_addr in;
    if (sscanf(line, " nameserver %63s", addr) == 1 && inet_pton(AF_INET, addr, &in) == 1) {
      add_loopback_address(nl, in, seq++);
    }
  }
  if (f) fclose(f);
  const char* list = getenv(WB_ENV_TCP_ADDRS);
  char one[64];
  while (list && *list && seq < 64) {
    size_t n = strcspn(list, ",");
    if (n < sizeof one) {
      memcpy(one, list, n);
      one[n] = '\0';
      struct in_addr in;
      if (inet_pton(AF_INET, one, &in) == 1) add_loopback_address(nl, in, seq++);
    }
    list += n;
    if (*list == ',') ++list;
  }
  close(nl);
}

/* The C twin of core/sys/fdpass.cpp's send_fds: this static program links no C++ library. */
static int send_fds(int sock, const int* fds, int n, const void* data, size_t len) {
  union {
    char buf[CMSG_SPACE(sizeof(int) * (WB_KEEPER_FDS + WB_MAX_EXTRA_PORTS + 1 + WB_MAX_FUSE_MASKS))];
    struct cmsghdr align;
  } ctl;
  memset(&ctl, 0, sizeof ctl);
  struct iovec iov = {(void*)data, len};
  struct msghdr msg;
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = ctl.buf;
  msg.msg_controllen = CMSG_SPACE(sizeof(int) * n);
  struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * n);
  memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
  ssize_t r;
  do {
    r = sendmsg(sock, &msg, MSG_NOSIGNAL);
  } while (r < 0 && errno == EINTR);
  return r == (ssize_t)len ? 0 : -1;
}

/* The command's stdout and stderr are only bwrap's business: the keeper holding
 * them would delay their end of file until this namespace is torn down. */
static void let_go_of_output(void) {
  int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, 1);
    dup2(null, 2);
    close(null);
  }
}

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

/* Reads a whole descriptor into a NUL-terminated buffer (malloc'd); NULL on error. */
static char* read_all(int fd, size_t* len) {
  size_t cap = 65536, got = 0;
  char* buf = malloc(cap + 1);
  if (!buf) return NULL;
  for (;;) {
    if (got == cap) {
      char* bigger = realloc(buf, cap * 2 + 1);
      if (!bigger) {
        free(buf);
        return NULL;
      }
      buf = bigger;
      cap *= 2;
    }
    ssize_t n = read(fd, buf + got, cap - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      free(buf);
      return NULL;
    }
    if (n == 0) break;
    got += (size_t)n;
  }
  buf[got] = 0;
  *len = got;
  return buf;
}

static int fail_at(const char* what, const char* path) {
  fprintf(stderr, "wavebox: error: placing the mount at %s: %s: %s\n", path, what, strerror(errno));
  return 125;
}

static int set_attr(int dfd, const char* path, unsigned flags, unsigned long long set, unsigned long long clr) {
  struct mount_attr a;
  memset(&a, 0, sizeof a);
  a.attr_set = set;
  a.attr_clr = clr;
  return (int)syscall(SYS_mount_setattr, dfd, path, flags, &a, sizeof a);
}

/* A detached copy of what is mounted at path (and below it), with the given flags added to
 * every mount of the copy; -1 after saying why. */
static int clone_tree(const char* path, const char* dst, unsigned long long set) {
  int t = (int)syscall(SYS_open_tree, AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
  if (t < 0) {
    fail_at("open_tree", dst);
    return -1;
  }
  if (set_attr(t, "", AT_EMPTY_PATH | AT_RECURSIVE, set, 0) != 0) {
    fail_at("mount_setattr", dst);
    close(t);
    return -1;
  }
  return t;
}

static int move_to(int t, const char* dst) {
  if (syscall(SYS_move_mount, t, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) != 0) return fail_at("move_mount", dst);
  close(t);
  return 0;
}

/* A new mount of a kernel filesystem (tmpfs, devpts), detached, with its options; -1 after
 * saying why. */
static int new_fs(const char* type, const char* const* opts, unsigned attrs, const char* dst) {
  int fs = (int)syscall(SYS_fsopen, type, FSOPEN_CLOEXEC);
  if (fs < 0) return fail_at("fsopen", dst), -1;
  for (int i = 0; opts[i]; i += 2) {
    int r = opts[i + 1] ? (int)syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, opts[i], opts[i + 1], 0)
                        : (int)syscall(SYS_fsconfig, fs, FSCONFIG_SET_FLAG, opts[i], NULL, 0);
    if (r != 0) return fail_at(opts[i], dst), close(fs), -1;
  }
  if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) != 0)
    return fail_at("fsconfig", dst), close(fs), -1;
  int m = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, attrs);
  close(fs);
  if (m < 0) return fail_at("fsmount", dst), -1;
  return m;
}

/* A read mask that reports (WB_MOUNT_FUSE_*): a FUSE filesystem of one node, a directory or a
 * file, on the connection dev (/dev/fuse, opened by us: the kernel wants the mount made in the
 * user namespace that opened it). wavebox serves its requests (bwrap/supervise/fuse_masks.cpp); its first,
 * FUSE_INIT, is answered here, so that nothing waits for wavebox but the command. allow_other:
 * only processes of this user namespace reach it; the host's, wavebox's own included, get
 * EACCES from the kernel without a request. Detached, read-only, noexec; -1 with nothing
 * printed when any step fails (the caller places the old mask instead). */
static int new_fuse(int dev, int is_dir) {
  int fs = (int)syscall(SYS_fsopen, "fuse", FSOPEN_CLOEXEC);
  if (fs < 0) return -1;
  char fd_s[16], uid_s[16], gid_s[16];
  snprintf(fd_s, sizeof fd_s, "%d", dev);
  snprintf(uid_s, sizeof uid_s, "%u", (unsigned)getuid());
  snprintf(gid_s, sizeof gid_s, "%u", (unsigned)getgid());
  const char* opts[] = {"source",  "wavebox", "fd",       fd_s,  "rootmode",    is_dir ? "40000" : "100000",
                        "user_id", uid_s,     "group_id", gid_s, "allow_other", NULL,
                        NULL};
  for (int i = 0; opts[i]; i += 2) {
    int r = opts[i + 1] ? (int)syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, opts[i], opts[i + 1], 0)
                        : (int)syscall(SYS_fsconfig, fs, FSCONFIG_SET_FLAG, opts[i], NULL, 0);
    if (r != 0) return close(fs), -1;
  }
  if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) != 0) return close(fs), -1;
  int m = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
                       MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
  close(fs);
  if (m < 0) return -1;
  /* The kernel queued FUSE_INIT when the filesystem was made (a read needs FUSE_MIN_READ_BUFFER). */
  static char req[FUSE_MIN_READ_BUFFER + 4096];
  ssize_t n;
  do {
    n = read(dev, req, sizeof req);
  } while (n < 0 && errno == EINTR);
  struct fuse_in_header* in = (struct fuse_in_header*)req;
  if (n < (ssize_t)(sizeof *in + sizeof(struct fuse_init_in)) || in->opcode != FUSE_INIT) {
    close(m);
    return errno = EPROTO, -1;
  }
  struct {
    struct fuse_out_header h;
    struct fuse_init_out o;
  } reply;
  memset(&reply, 0, sizeof reply);
  reply.h.len = sizeof reply;
  reply.h.unique = in->unique;
  reply.o.major = FUSE_KERNEL_VERSION;
  reply.o.minor = FUSE_KERNEL_MINOR_VERSION;
  reply.o.max_write = 4096;
  reply.o.time_gran = 1;
  if (write(dev, &reply, sizeof reply) != (ssize_t)sizeof reply) {
    close(m);
    return errno = EPROTO, -1;
  }
  return m;
}

/* The FUSE masks placed (their connections, for wavebox) and a byte per WB_MOUNT_FUSE_* record. */
static int fuse_served[WB_MAX_FUSE_MASKS];
static char fuse_flags[WB_MAX_FUSE_MASKS];
static int n_fuse_served, n_fuse_records;

/* Creates a missing mount point (and its missing parents), only inside a directory mask this
 * shim placed (in_mask): the host's paths were there when planned, so elsewhere a missing one
 * vanished meanwhile, and nothing is created on the host (ENOENT: the run stops). */
static int ensure_point(const char* path, int is_dir, int in_mask) {
  struct stat st;
  if (lstat(path, &st) == 0 || errno != ENOENT) return 0;
  if (!in_mask) return errno = ENOENT, -1;
  char buf[4096];
  if (strlen(path) >= sizeof buf) return errno = ENAMETOOLONG, -1;
  strcpy(buf, path);
  for (char* s = strchr(buf + 1, '/'); s; s = strchr(s + 1, '/')) {
    *s = 0;
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
    *s = '/';
  }
  if (is_dir) return mkdir(buf, 0755) == 0 || errno == EEXIST ? 0 : -1;
  int fd = open(buf, O_WRONLY | O_CREAT | O_CLOEXEC, 0444);
  if (fd < 0) return -1;
  close(fd);
  return 0;
}

static int must_be_read_only(const char* path) {
  struct statvfs sv;
  if (statvfs(path, &sv) != 0) return fail_at("statvfs", path);
  if (!(sv.f_flag & ST_RDONLY)) {
    errno = EROFS;
    return fail_at("not read-only after mounting", path);
  }
  return 0;
}

static const char* const kDevNodes[] = {"null", "zero", "full", "random", "urandom", "tty", NULL};

/* The sandbox's /dev, as bwrap --dev builds it, but each device node a read-only bind (nobody
 * inside may chmod, chown or touch the host's node; reading and writing the device still work).
 * nodes[]: detached copies of the host's nodes, taken before anything covered them. */
static int build_dev(const int* nodes, int console) {
  static const char* const dev_opts[] = {"mode", "0755", NULL};
  int m = new_fs("tmpfs", dev_opts, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, "/dev");
  if (m < 0) return 125;
  int n = 0;
  for (; kDevNodes[n]; ++n) {
    int fd = openat(m, kDevNodes[n], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
    if (fd < 0) return fail_at("creating a node's mount point", "/dev");
    close(fd);
  }
  if (console >= 0) {
    int fd = openat(m, "console", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
    if (fd < 0) return fail_at("creating the console's mount point", "/dev");
    close(fd);
  }
  static const char* const links[][2] = {{"stdin", "/proc/self/fd/0"},  {"stdout", "/proc/self/fd/1"},
                                         {"stderr", "/proc/self/fd/2"}, {"fd", "/proc/self/fd"},
                                         {"core", "/proc/kcore"},       {"ptmx", "pts/ptmx"}};
  for (size_t i = 0; i < sizeof links / sizeof links[0]; ++i) {
    if (symlinkat(links[i][1], m, links[i][0]) != 0) return fail_at("a symbolic link", "/dev");
  }
  if (mkdirat(m, "shm", 0755) != 0 || mkdirat(m, "pts", 0755) != 0) return fail_at("mkdir", "/dev");
  if (move_to(m, "/dev") != 0) return 125;
  char dst[64];
  for (int i = 0; i < n; ++i) {
    snprintf(dst, sizeof dst, "/dev/%s", kDevNodes[i]);
    if (move_to(nodes[i], dst) != 0) return 125;
  }
  if (console >= 0 && move_to(console, "/dev/console") != 0) return 125;
  static const char* const pts_opts[] = {"newinstance", NULL, "ptmxmode", "0666", "mode", "620", NULL};
  int pts = new_fs("devpts", pts_opts, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, "/dev/pts");
  if (pts < 0 || move_to(pts, "/dev/pts") != 0) return 125;
  static const char* const shm_opts[] = {"mode", "1777", NULL};
  int shm = new_fs("tmpfs", shm_opts, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, "/dev/shm");
  if (shm < 0 || move_to(shm, "/dev/shm") != 0) return 125;
  for (int i = 0; i < n; ++i) {
    snprintf(dst, sizeof dst, "/dev/%s", kDevNodes[i]);
    if (must_be_read_only(dst) != 0) return 125;
  }
  return 0;
}

/* A detached read-only copy of the host's device node at path (a character device, or -1). */
static int clone_node(const char* path) {
  int t = clone_tree(path, path, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
  if (t < 0) return -1;
  struct stat st;
  if (fstat(t, &st) != 0 || !S_ISCHR(st.st_mode)) {
    errno = ENODEV;
    fail_at("not a character device", path);
    close(t);
    return -1;
  }
  return t;
}

/* Fallback (no mount API): bwrap built /dev and bound the host's nodes writable; make each
 * read-only with a bind remount, keeping the flags it has (locked ones must be repeated). */
static int devices_read_only(void) {
  static const char* const nodes[] = {"/dev/null",    "/dev/zero", "/dev/full",    "/dev/random",
                                      "/dev/urandom", "/dev/tty",  "/dev/console", NULL};
  for (int i = 0; nodes[i]; ++i) {
    struct statvfs sv;
    if (statvfs(nodes[i], &sv) != 0) {
      if (errno == ENOENT) continue; /* /dev/console: only with a terminal */
      return fail_at("statvfs", nodes[i]);
    }
    unsigned long flags = MS_BIND | MS_REMOUNT | MS_RDONLY;
    if (sv.f_flag & ST_NOSUID) flags |= MS_NOSUID;
    if (sv.f_flag & ST_NODEV) flags |= MS_NODEV;
    if (sv.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
    if (sv.f_flag & ST_NOATIME) flags |= MS_NOATIME;
    if (sv.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
    if (sv.f_flag & ST_RELATIME) flags |= MS_RELATIME;
    if (mount(NULL, nodes[i], NULL, flags, NULL) != 0) return fail_at("remount read-only", nodes[i]);
    if (must_be_read_only(nodes[i]) != 0) return 125;
  }
  return 0;
}

/* bwrap --disable-userns, done here instead: we stay in bwrap's user namespace, where we may
 * mount /proc (from a nested one we could not). Its limit on user namespaces becomes 0, so none
 * can be made from it or below it; only a capability in it could raise the limit again, and
 * every capability is dropped before the command. Checked. (The seccomp program refuses
 * CLONE_NEWUSER too.) */
/* bwrap leaves the sandbox's mounts slaves of the host's: a file system the host mounts later
 * under a shared mount (a USB stick, a FUSE mount, a container's volume) would arrive inside, as
 * writable as the host mounted it. Private, nothing the host mounts after this point arrives. */
static int make_private(void) {
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return die("making the sandbox's mounts private");
  return 0;
}

static int disable_userns(void) {
  if (write_file("/proc/sys/user/max_user_namespaces", "0") != 0) return die("limiting user namespaces to none");
  if (unshare(CLONE_NEWUSER) == 0) {
    errno = EPERM;
    return die("a user namespace could still be made");
  }
  if (errno != ENOSPC) return die("checking that no user namespace can be made");
  return 0;
}

/* The sandbox's /proc, as bwrap --proc makes it: a new instance for its pid namespace (we are
 * its pid 1), nosuid, nodev, noexec, over the host's; the corners that reach the kernel
 * (sysctls, sysrq, interrupts, buses) read-only. */
static int mount_proc(void) {
  static const char* const opts[] = {"source", "proc", NULL};
  int m = new_fs("proc", opts, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, "/proc");
  if (m < 0 || move_to(m, "/proc") != 0) {
    fprintf(stderr,
            "wavebox: hint: inside a container that refuses a new /proc, "
            "sandbox.enableWeakerNestedSandbox keeps the host's (read-only; weaker)\n");
    return 125;
  }
  static const char* const covered[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", NULL};
  for (int i = 0; covered[i]; ++i) {
    struct stat st;
    if (lstat(covered[i], &st) != 0) {
      if (errno == ENOENT) continue; /* not built into this kernel */
      return fail_at("lstat", covered[i]);
    }
    int t = clone_tree(covered[i], covered[i],
                       MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
    if (t < 0 || move_to(t, covered[i]) != 0 || must_be_read_only(covered[i]) != 0) return 125;
  }
  return 0;
}

struct record {
  const char* kind;
  const char* a;
  const char* path;
  int fd;
  int is_dir;
  int out_of_reach; /* nothing in here can reach it: not placed (out_of_reach) */
  int fuse;         /* WB_MOUNT_FUSE_*: 1 a directory, 2 a file; 0 otherwise */
  int fuse_dev;     /* its /dev/fuse connection, or -1 (then the old mask) */
  int fuse_index;   /* its place among the list's FUSE records */
};

/* Whether the way to path is closed for good to the command: a directory on it that we may not
 * search (EACCES) and that is not ours (a user this namespace does not map, mode 0700, whose
 * contents root's scan outside could read). The command runs with our uid and no capability, so
 * it cannot search that directory either, nor chmod it open (only its owner could): no mount
 * there changes what the command can do (a guard, a mask or a pin is not needed, and a writable
 * root there is as unreachable with as without its bind). A directory of ours closed with chmod
 * (an earlier run's trick to hide a repository) is not out of reach: the command could open it
 * again, so its mounts are placed, and fail the run when they cannot be. */
static int out_of_reach(const char* path) {
  int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    close(fd);
    return 0;
  }
  if (errno != EACCES) return 0;
  char buf[4096];
  if (strlen(path) >= sizeof buf || path[0] != '/') return 0;
  strcpy(buf, path);
  /* The first directory on the way that we may not search. */
  for (char* s = strchr(buf + 1, '/'); s; s = strchr(s + 1, '/')) {
    *s = 0;
    struct stat st;
    int blocked = faccessat(AT_FDCWD, buf, X_OK, AT_EACCESS) != 0 && errno == EACCES;
    if (blocked) return lstat(buf, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid != geteuid();
    *s = '/';
  }
  return 0;
}

/* The mounts of MOUNTS_FD (bwrap/plan/plan.hpp, render_shim_mounts). *placed: whether there were
 * any (then bwrap was not given the seccomp filter, and we load it).
 *
 * The whole list: bwrap gave us the host's tree (--dev-bind / /) and left us in its user
 * namespace, where we first forbid new user namespaces (its --disable-userns). In bwrap's mount
 * namespace: copies of everything the list binds are taken first, from the host's
 * tree, as bwrap takes its sources from the old root; then every mount of the tree is made
 * nosuid, nodev and (unless the filesystem is open) read-only in one call; /proc is mounted
 * and /dev built; the
 * copies and masks are placed in the planned order; directory masks that hold mounts become
 * read-only last; what must be read-only is checked. */
/* The mount list's records (pointing into buf), or NULL after saying why. */
static struct record* parse_mount_list(const char* buf, size_t len, size_t* count) {
  size_t cap = 8, n = 0;
  struct record* r = malloc(cap * sizeof *r);
  if (!r) return die("the mount list"), NULL;
  const char* p = buf;
  for (;;) {
    const char* f[3];
    int got = wb_next_mount(&p, buf + len, f);
    if (got < 0) return errno = EINVAL, die("the mount list"), free(r), NULL;
    if (got == 0) break;
    if (n == cap) r = realloc(r, (cap *= 2) * sizeof *r);
    if (!r) return die("the mount list"), NULL;
    r[n++] = (struct record){f[0], f[1], f[2], -1, 0, 0, 0, -1, -1};
  }
  *count = n;
  return r;
}

/* Each record's source, opened (a detached copy of its tree) before /dev is built over the
 * host's, and its FUSE connection. 0, or an exit status. */
static int take_sources(struct record* r, size_t n) {
  int fuse_usable = 1; /* until /dev/fuse cannot be opened */
  for (size_t i = 3; i < n; ++i) {
    r[i].fuse = strcmp(r[i].kind, WB_MOUNT_FUSE_DIR) == 0 ? 1 : strcmp(r[i].kind, WB_MOUNT_FUSE_FILE) == 0 ? 2 : 0;
    int ro = strcmp(r[i].kind, WB_MOUNT_RO) == 0 || r[i].fuse == 2;
    if (!ro && strcmp(r[i].kind, WB_MOUNT_RW) != 0 && strcmp(r[i].kind, WB_MOUNT_TMPFS) != 0 && r[i].fuse != 1) {
      return errno = EINVAL, die("the mount list");
    }
    if (r[i].fuse) {
      if (n_fuse_records == WB_MAX_FUSE_MASKS) return errno = EINVAL, die("the mount list");
      r[i].fuse_index = n_fuse_records;
      fuse_flags[n_fuse_records++] = WB_FUSE_NOT;
    }
    if (out_of_reach(r[i].path)) {
      r[i].out_of_reach = 1;
      continue;
    }
    /* Opened before /dev is built over the host's (the fallback's source is taken below). */
    if (r[i].fuse && fuse_usable && (r[i].fuse_dev = open("/dev/fuse", O_RDWR | O_CLOEXEC)) < 0) fuse_usable = 0;
    if (strcmp(r[i].kind, WB_MOUNT_TMPFS) == 0 || r[i].fuse == 1) continue;
    r[i].fd = clone_tree(r[i].a, r[i].path, (ro ? MOUNT_ATTR_RDONLY : 0) | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
    if (r[i].fd < 0) return 125;
    struct stat st;
    if (fstat(r[i].fd, &st) != 0) return fail_at("fstat", r[i].path);
    r[i].is_dir = S_ISDIR(st.st_mode);
  }

  return 0;
}

/* Every record's mount, in the list's order (a mask first, what it holds after). 0, or an exit
 * status. */
static int place_records(struct record* r, size_t n) {
  for (size_t i = 3; i < n; ++i) {
    if (r[i].out_of_reach) continue;
    int in_mask = 0;
    for (size_t j = 3; j < i && !in_mask; ++j) {
      size_t len = strlen(r[j].path);
      in_mask =
          strcmp(r[j].kind, WB_MOUNT_TMPFS) == 0 && strncmp(r[i].path, r[j].path, len) == 0 && r[i].path[len] == '/';
    }
    if (r[i].fuse_dev >= 0) {
      int m = new_fuse(r[i].fuse_dev, r[i].fuse == 1);
      if (m >= 0) {
        if (ensure_point(r[i].path, r[i].fuse == 1, in_mask) != 0)
          return fail_at("creating the mount point", r[i].path);
        if (move_to(m, r[i].path) != 0) return 125;
        if (r[i].fd >= 0) close(r[i].fd);
        r[i].fd = -1;
        fuse_served[n_fuse_served++] = r[i].fuse_dev;
        fuse_flags[r[i].fuse_index] = WB_FUSE_SERVED;
        continue;
      }
      close(r[i].fuse_dev);
      r[i].fuse_dev = -1;
    }
    if (r[i].fd >= 0) {
      if (ensure_point(r[i].path, r[i].is_dir, in_mask) != 0) return fail_at("creating the mount point", r[i].path);
      if (move_to(r[i].fd, r[i].path) != 0) return 125;
      continue;
    }
    /* A directory mask (tmpfs, or the fallback of fuse-dir, whose argument is "0000"). */
    int open_mask = strcmp(r[i].a, "0000") != 0; /* it holds mounts: read-only once they are placed */
    const char* opts[] = {"mode", r[i].a, NULL};
    int m =
        new_fs("tmpfs", opts, (open_mask ? 0 : MOUNT_ATTR_RDONLY) | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, r[i].path);
    if (m < 0) return 125;
    if (ensure_point(r[i].path, 1, in_mask) != 0) return fail_at("creating the mount point", r[i].path);
    if (move_to(m, r[i].path) != 0) return 125;
  }
  return 0;
}

/* Masks that hold mounts read-only once those are placed; then the tree and every read-only
 * record checked to be read-only. 0, or an exit status. */
static int seal_read_only(const struct record* r, size_t n, int root_ro) {
  for (size_t i = 3; i < n; ++i) {
    if (strcmp(r[i].kind, WB_MOUNT_TMPFS) == 0 && strcmp(r[i].a, "0000") != 0 && !r[i].out_of_reach &&
        set_attr(AT_FDCWD, r[i].path, 0, MOUNT_ATTR_RDONLY, 0) != 0) {
      return fail_at("mount_setattr", r[i].path);
    }
  }
  if (root_ro && must_be_read_only("/") != 0) return 125;
  for (size_t i = 3; i < n; ++i) {
    /* A FUSE mask was made read-only with the mount (and statvfs would ask wavebox, which
     * does not have the connection yet). */
    if (strcmp(r[i].kind, WB_MOUNT_RW) != 0 && !r[i].out_of_reach && r[i].fuse_dev < 0 &&
        must_be_read_only(r[i].path) != 0) {
      return 125;
    }
  }
  return 0;
}

static int place_mounts(int fd, int* placed) {
  size_t len = 0;
  char* buf = read_all(fd, &len);
  close(fd);
  if (!buf) return die("reading the mount list");
  *placed = len > 0;
  if (len == 0) {
    free(buf);
    return 0;
  }
  size_t n = 0;
  struct record* r = parse_mount_list(buf, len, &n);
  if (!r) return 125;
  int devices_ro = n == 1 && strcmp(r[0].kind, WB_MOUNT_DEVICES_RO) == 0;
  if (!devices_ro && (n < 3 || strcmp(r[0].kind, WB_MOUNT_ROOT) != 0 || strcmp(r[1].kind, WB_MOUNT_DEV) != 0 ||
                      strcmp(r[2].kind, WB_MOUNT_PROC) != 0 ||
                      (strcmp(r[2].a, WB_PROC_NEW) != 0 && strcmp(r[2].a, WB_PROC_HOST) != 0))) {
    return errno = EINVAL, die("the mount list");
  }
  if (devices_ro) {
    /* In bwrap's nested user namespace: a mount namespace of our own to mount anything. */
    if (unshare(CLONE_NEWNS) != 0) return die("a mount namespace of its own");
    if (make_private() != 0) return 125;
    return devices_read_only();
  }
  /* Still in bwrap's user namespace, which owns bwrap's mount namespace: we mount in that one
   * (its mounts are slaves of the host's, so nothing we place propagates out). */
  if (disable_userns() != 0) return 125;
  if (make_private() != 0) return 125;

  int nodes[sizeof kDevNodes / sizeof kDevNodes[0]];
  char src[64];
  for (int i = 0; kDevNodes[i]; ++i) {
    snprintf(src, sizeof src, "/dev/%s", kDevNodes[i]);
    if ((nodes[i] = clone_node(src)) < 0) return 125;
  }
  int console = -1;
  if (r[1].a[0] && (console = clone_node(r[1].a)) < 0) return 125;
  if (take_sources(r, n) != 0) return 125;
  int root_ro = strcmp(r[0].a, WB_ROOT_RO) == 0;
  if (set_attr(AT_FDCWD, "/", AT_RECURSIVE, (root_ro ? MOUNT_ATTR_RDONLY : 0) | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
               0) != 0) {
    return fail_at("mount_setattr", "/");
  }
  /* The host's /proc (enableWeakerNestedSandbox, where a new one is refused) stays where the
   * tree has it, read-only like the rest of it. */
  const int host_proc = strcmp(r[2].a, WB_PROC_HOST) == 0;
  if (host_proc) {
    if (set_attr(AT_FDCWD, "/proc", AT_RECURSIVE,
                 MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, 0) != 0) {
      return fail_at("mount_setattr", "/proc");
    }
    if (must_be_read_only("/proc") != 0) return 125;
  } else if (mount_proc() != 0) {
    return 125;
  }
  if (build_dev(nodes, console) != 0) return 125;

  if (place_records(r, n) != 0) return 125;
  if (seal_read_only(r, n, root_ro) != 0) return 125;
  free(r);
  free(buf);
  /* bwrap entered the working directory in the host's tree: enter it again, so it lies on top
   * of the mounts just placed. */
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd) || chdir(cwd) != 0) return die("re-entering the working directory");
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

/* In the keeper's network namespace: the loopback up, the proxy's, resolver's and transparent
 * listeners bound, and a socket-diagnostics socket; their count (fds in WB_WORD_LISTENERS's
 * order). A step that fails ends the keeper, saying which. */
static int make_listeners(int errfd, int fds[WB_KEEPER_FDS + WB_MAX_EXTRA_PORTS]) {
  /* The loopback must be raised by a process inside the namespace: an ioctl, not `ip`. */
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) != 0) fail_step(errfd, WB_STEP_LOOPBACK);
  ifr.ifr_flags = (short)(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
  if (ioctl(s, SIOCSIFFLAGS, &ifr) != 0) fail_step(errfd, WB_STEP_LOOPBACK);
  close(s);
  /* Every connection in this namespace runs over its loopback, where a pacing congestion control
   * (bbr, a common host default the namespace inherits) only costs: a timer per burst, a third of
   * the proxy's download speed measured here. cubic, else reno; a speed choice, so a refusal
   * leaves the inherited one. */
  if (write_file("/proc/sys/net/ipv4/tcp_congestion_control", "cubic") != 0)
    (void)write_file("/proc/sys/net/ipv4/tcp_congestion_control", "reno");
  int lh = listener(WB_HTTP_PORT), ls = listener(WB_SOCKS_PORT);
  if (lh < 0 || ls < 0) fail_step(errfd, WB_STEP_LISTENERS);
  /* DNS and transparent TCP: the namespace's resolver (port 53, UDP) and the listeners for the
   * pool's addresses (ports 80 and 443 of every address). */
  add_local_addresses();
  int dns = any_address(SOCK_DGRAM, WB_DNS_PORT), dns_tcp = any_address(SOCK_STREAM, WB_DNS_PORT);
  int t80 = any_address(SOCK_STREAM, 80), t443 = any_address(SOCK_STREAM, 443);
  if (dns < 0 || dns_tcp < 0 || t80 < 0 || t443 < 0) fail_step(errfd, WB_STEP_LISTENERS);

  /* The listeners go out first: wavebox serves them and plans the sandbox meanwhile. bwrap
   * starts at once too, and waits for its argument list, which wavebox writes into a pipe, before
   * or once it has planned (or wavebox kills us, and with us everything below). */
  /* And a socket-diagnostics socket of this namespace: wavebox asks it which Unix sockets the
   * sandbox has bound (a connect to any other is a host daemon's). */
  int diag = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (diag < 0) fail_step(errfd, WB_STEP_LISTENERS);
  const int first[WB_KEEPER_FDS] = {lh, ls, diag, dns, dns_tcp, t80, t443};
  memcpy(fds, first, sizeof first);
  int nfds = WB_KEEPER_FDS;
  /* The allowlist's own ports (github.com:22, a database's): a listener each, as for 80 and 443. */
  const char* extra = getenv(WB_ENV_TCP_PORTS);
  while (extra && *extra && nfds < WB_KEEPER_FDS + WB_MAX_EXTRA_PORTS) {
    char* end = NULL;
    long port = strtol(extra, &end, 10);
    if (end == extra) break;
    if (port > 0 && port < 65536 && port != 80 && port != 443 && port != WB_HTTP_PORT && port != WB_SOCKS_PORT &&
        port != WB_DNS_PORT) {
      int l = any_address(SOCK_STREAM, (int)port);
      if (l < 0) fail_step(errfd, WB_STEP_LISTENERS);
      fds[nfds++] = l;
    }
    extra = *end == ',' ? end + 1 : end;
  }
  return nfds;
}

static int keeper(int argc, char** argv) {
  if (argc < 8) return 125;
  pid_t parent = (pid_t)atol(argv[2]);
  const char* uid = argv[3];
  const char* gid = argv[4];
  int sock = atoi(argv[5]);
  int errfd = atoi(argv[6]);
  /* Dies with wavebox; armed first, then checked, so no moment is uncovered. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != parent) _exit(127);
  fcntl(sock, F_SETFD, FD_CLOEXEC);
  fcntl(errfd, F_SETFD, FD_CLOEXEC);
  if (unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWPID) != 0) fail_step(errfd, WB_STEP_UNSHARE);
  /* An unprivileged process may map exactly its own ids, after giving up setgroups. */
  char map[64];
  if (write_file("/proc/self/setgroups", "deny") != 0) fail_step(errfd, WB_STEP_ID_MAPS);
  snprintf(map, sizeof map, "%s %s 1\n", uid, uid);
  if (write_file("/proc/self/uid_map", map) != 0) fail_step(errfd, WB_STEP_ID_MAPS);
  snprintf(map, sizeof map, "%s %s 1\n", gid, gid);
  if (write_file("/proc/self/gid_map", map) != 0) fail_step(errfd, WB_STEP_ID_MAPS);
  /* bwrap itself is pid 1 of this pid namespace: when it dies, the kernel ends every process
   * of the namespace and below. A pipe tells it, before exec, whether the keeper still lives
   * (getppid() is 0 across a pid namespace boundary). Started before the namespace's network is
   * made (below, meanwhile, on the other core): nothing of the sandbox runs before wavebox has
   * the listeners, and a step that fails below ends us, and bwrap with us. */
  int alive[2];
  if (pipe2(alive, O_CLOEXEC) != 0) fail_step(errfd, WB_STEP_FORK_BWRAP);
  pid_t bwrap = fork();
  if (bwrap < 0) fail_step(errfd, WB_STEP_FORK_BWRAP);
  if (bwrap == 0) {
    close(alive[1]);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) _exit(127);
    struct pollfd pf = {alive[0], POLLIN, 0};
    if (poll(&pf, 1, 0) > 0) _exit(127); /* EOF: the keeper is already gone */
    execv(argv[7], argv + 7);
    fail_step(errfd, WB_STEP_EXEC_BWRAP);
  }
  close(alive[0]);
  g_bwrap = bwrap;
  /* The allowlist's ports and addresses, once wavebox has read the settings (it may have
   * started us before): into our environment, where the listeners below look. */
  unsigned char head[3];
  static char config[WB_MAX_NET_CONFIG];
  if (read_full(sock, head, sizeof head) != 0 || head[0] != WB_WORD_NET_CONFIG) fail_step(errfd, WB_STEP_NET_CONFIG);
  size_t config_len = ((size_t)head[1] << 8) | head[2];
  if (config_len > sizeof config || read_full(sock, config, config_len) != 0 || wb_net_config(config, config_len) < 0)
    fail_step(errfd, WB_STEP_NET_CONFIG);
  for (char* p = config; p < config + config_len; p += strlen(p) + 1) putenv(p);
  int fds[WB_KEEPER_FDS + WB_MAX_EXTRA_PORTS];
  const int nfds = make_listeners(errfd, fds);
  char hello[2] = {WB_WORD_LISTENERS, (char)nfds};
  if (send_fds(sock, fds, nfds, hello, 2) != 0) fail_step(errfd, WB_STEP_HAND_OVER);
  for (int i = 0; i < nfds; ++i) close(fds[i]);

  if (write(sock, &bwrap, sizeof bwrap) != (ssize_t)sizeof bwrap) fail_step(errfd, WB_STEP_HAND_OVER);
  close(sock);
  close(errfd);
  let_go_of_output();
  for (;;) {
    int st;
    pid_t p = waitpid(bwrap, &st, 0);
    if (p < 0 && errno == EINTR) continue;
    if (p < 0) _exit(127);
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
  }
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

/* Places every mount of the list. Every mount's source is held open until the tree is made
 * read-only: a workspace with many protected folders (node_modules) needs more than the usual 1024
 * descriptors; the caller's limit is back before the command starts. 0, or an exit status. */
static int place_all_mounts(int mounts_fd) {
  int placed = 0;
  struct rlimit nofile;
  int raised = 0;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    struct rlimit up = {nofile.rlim_max, nofile.rlim_max};
    raised = setrlimit(RLIMIT_NOFILE, &up) == 0;
  }
  if (place_mounts(mounts_fd, &placed) != 0) return 125;
  if (raised && setrlimit(RLIMIT_NOFILE, &nofile) != 0) return die("restoring RLIMIT_NOFILE");
  if (!placed) return errno = EINVAL, die("the mount list is empty");
  return 0;
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
  if (argc >= 2 && strcmp(argv[1], "keeper") == 0) return keeper(argc, argv);
  if (argc != 5) {
    fprintf(stderr, "wavebox-shim: usage: wavebox-shim FILTER_FD SOCK_FD SPEC_FD MOUNTS_FD\n");
    return 125;
  }
  return observed_init(argv);
}

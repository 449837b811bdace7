/* pid 1's first work: the mounts of the plan (bwrap/plan/plan.hpp, render_shim_mounts) placed in
 * bwrap's mount namespace with the new mount API, /proc and /dev made, what must be read-only
 * checked. */
#include "bwrap/shim/shim.h"

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
int fuse_served[WB_MAX_FUSE_MASKS];
char fuse_flags[WB_MAX_FUSE_MASKS];
int n_fuse_served, n_fuse_records;

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

/* Places every mount of the list. Every mount's source is held open until the tree is made
 * read-only: a workspace with many protected folders (node_modules) needs more than the usual 1024
 * descriptors; the caller's limit is back before the command starts. 0, or an exit status. */
int place_all_mounts(int mounts_fd) {
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

/* wavebox, the program a user runs: a small static program that starts a run's sandbox (the
 * keeper, which makes the namespaces and starts bwrap) first thing, then becomes wavebox-core,
 * the C++ program that reads the options and settings, plans and supervises the run, and does
 * every other subcommand.
 *
 * Why a program of its own: wavebox-core needs ~0.75 ms from its exec to its main on the
 * machines measured (the dynamic loader, libc's start-up, C++ static initialisation), all of it
 * before the sandbox could start. This one reaches main in ~0.07 ms, so the keeper and bwrap run
 * on the other core while wavebox-core loads (docs/design.md, "A launcher ahead of the core").
 *
 * What it does not decide: everything here is redone or checked by wavebox-core, which drops
 * this launch and makes its own when anything differs (the settings want another bwrap or a
 * cgroup of their own, the run is not sandboxed, the shim or bwrap found differs). It only
 * ever runs the system's bwrap from the directories wavebox trusts and the shim next to
 * wavebox-core. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bwrap/shim/wire.h"

#ifndef WB_CORE
#define WB_CORE "wavebox-core"
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef F_SETPIPE_SZ
#define F_SETPIPE_SZ 1031
#endif

extern char** environ;

static int dir_of_self(char* out, size_t n) {
  ssize_t len = readlink("/proc/self/exe", out, n - 1);
  if (len <= 0) return -1;
  out[len] = '\0';
  char* slash = strrchr(out, '/');
  if (!slash) return -1;
  *slash = '\0';
  return 0;
}

static int executable(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The system's bwrap, as wavebox-core's trusted_program finds it: a root-owned file nobody else
 * may write, in a root-owned directory nobody else may write. */
static int trusted_bwrap(char* out, size_t n) {
  static const char* const dirs[] = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; ++i) {
    struct stat d, f;
    if (snprintf(out, n, "%s/bwrap", dirs[i]) >= (int)n) continue;
    if (stat(dirs[i], &d) != 0 || d.st_uid != 0 || (d.st_mode & 022) != 0) continue;
    if (stat(out, &f) != 0 || !S_ISREG(f.st_mode) || f.st_uid != 0 || (f.st_mode & 022) != 0) continue;
    if (access(out, X_OK) == 0) return 0;
  }
  return -1;
}

/* Above the numbers handed to bwrap, so the child's dup2 always changes numbers. */
static int high(int fd) {
  if (fd < 0) return -1;
  int h = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  close(fd);
  return h;
}

struct child_args {
  const char* shim;
  char** argv;
  char** envp;
  int dups[9][2];
  int sock, err;
};

/* In the vforked child: system calls only, up to exec. */
static void __attribute__((noreturn)) child(const struct child_args* c) {
  int sock_hi = fcntl(c->sock, F_DUPFD_CLOEXEC, 200);
  int err_hi = fcntl(c->err, F_DUPFD_CLOEXEC, 200);
  if (sock_hi < 0 || err_hi < 0) _exit(127);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  /* Its own process group: a terminal's Ctrl-C reaches wavebox, which forwards it. */
  setpgid(0, 0);
  struct wb_keeper_error e = {WB_STEP_EXEC_BWRAP, 0};
  for (int i = 0; i < 9; ++i) {
    if (dup2(c->dups[i][0], c->dups[i][1]) < 0) goto fail;
  }
  if (dup2(sock_hi, WB_KEEPER_SOCK_FD) < 0 || dup2(err_hi, WB_KEEPER_ERR_FD) < 0) goto fail;
  /* Descriptors the caller leaked must not reach the sandbox. */
  syscall(SYS_close_range, (unsigned)WB_KEEPER_ERR_FD + 1, ~0U, 0);
  execve(c->shim, c->argv, c->envp);
fail:
  e.err = errno;
  (void)!write(err_hi, &e, sizeof e);
  _exit(127);
}

/* Starts the keeper as wavebox-core's start_launch would for a run that learns its ports later;
 * fills fds (wb_early_fd order) and returns the keeper's pid, or -1 with nothing left behind. */
static pid_t start_keeper(const char* shim, const char* bwrap, int fds[WB_EARLY_FDS]) {
  for (int i = 0; i < WB_EARLY_FDS; ++i) fds[i] = -1;
  /* A standard descriptor closed by the caller: wavebox-core holds its number with /dev/null
   * and tells the command so; nothing of ours may take that number first. */
  for (int fd = 0; fd < 3; ++fd) {
    if (fcntl(fd, F_GETFD) < 0) return -1;
  }
  int p[2], args_rd = -1, null = -1, obs_theirs = -1, sv[2] = {-1, -1}, ep[2] = {-1, -1};
  pid_t pid = -1;
  if (pipe2(p, O_CLOEXEC) != 0) goto out;
  fds[WB_EARLY_STATUS_RD] = high(p[0]);
  fds[WB_EARLY_STATUS_WR] = high(p[1]);
  if (pipe2(p, O_CLOEXEC) != 0) goto out;
  args_rd = high(p[0]);
  fds[WB_EARLY_ARGS_WR] = high(p[1]);
  (void)fcntl(fds[WB_EARLY_ARGS_WR], F_SETPIPE_SZ, 1 << 20);
  if (pipe2(p, O_CLOEXEC) != 0) goto out;
  fds[WB_EARLY_ERR_RD] = high(p[0]);
  fds[WB_EARLY_ERR_WR] = high(p[1]);
  null = high(open("/dev/null", O_RDWR | O_CLOEXEC));
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) != 0) goto out;
  fds[WB_EARLY_OBS] = high(p[0]);
  obs_theirs = high(p[1]);
  fds[WB_EARLY_FILTER] = high(memfd_create("wavebox-seccomp", MFD_CLOEXEC));
  fds[WB_EARLY_SPEC] = high(memfd_create("wavebox-command", MFD_CLOEXEC));
  fds[WB_EARLY_MOUNTS] = high(memfd_create("wavebox-mounts", MFD_CLOEXEC));
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 || pipe2(ep, O_CLOEXEC) != 0) goto out;
  for (int i = 0; i < WB_EARLY_FDS - 2; ++i) {
    if (fds[i] < 0) goto out;
  }
  if (null < 0 || args_rd < 0 || obs_theirs < 0) goto out;

  char self[16], uid[16], gid[16], sock_s[8], err_s[8], a[8], f_sec[8], f_obs[8], f_spec[8], f_mounts[8];
  snprintf(self, sizeof self, "%d", (int)getpid());
  snprintf(uid, sizeof uid, "%u", (unsigned)geteuid());
  snprintf(gid, sizeof gid, "%u", (unsigned)getegid());
  snprintf(sock_s, sizeof sock_s, "%d", WB_KEEPER_SOCK_FD);
  snprintf(err_s, sizeof err_s, "%d", WB_KEEPER_ERR_FD);
  snprintf(a, sizeof a, "%d", WB_FD_ARGS);
  snprintf(f_sec, sizeof f_sec, "%d", WB_FD_SECCOMP);
  snprintf(f_obs, sizeof f_obs, "%d", WB_FD_OBSERVER);
  snprintf(f_spec, sizeof f_spec, "%d", WB_FD_SPEC);
  snprintf(f_mounts, sizeof f_mounts, "%d", WB_FD_MOUNTS);
  char* argv[] = {(char*)shim, "keeper", self,        uid,   gid,   sock_s, err_s,    (char*)bwrap, "--args",
                  a,           "--",     (char*)shim, f_sec, f_obs, f_spec, f_mounts, NULL};
  char* envp[] = {WB_LAUNCH_PATH, NULL};
  struct child_args c = {shim,
                         argv,
                         envp,
                         {{args_rd, WB_FD_ARGS},
                          {fds[WB_EARLY_STATUS_WR], WB_FD_STATUS},
                          {fds[WB_EARLY_FILTER], WB_FD_SECCOMP},
                          {fds[WB_EARLY_SPEC], WB_FD_SPEC},
                          {obs_theirs, WB_FD_OBSERVER},
                          {fds[WB_EARLY_MOUNTS], WB_FD_MOUNTS},
                          {null, 0},
                          {null, 1},
                          {fds[WB_EARLY_ERR_WR], 2}},
                         sv[1],
                         ep[1]};
  /* Every signal blocked until the child's exec: no handler runs in it (none is installed here
   * anyway, but the caller's ignored ones stay ignored, as through env or nohup). */
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &old);
  pid = vfork();
  if (pid == 0) child(&c);
  sigprocmask(SIG_SETMASK, &old, NULL);
  if (pid > 0) {
    fds[WB_EARLY_CONTROL] = high(sv[0]);
    fds[WB_EARLY_ERROR_PIPE] = high(ep[0]);
    sv[0] = ep[0] = -1;
    if (fds[WB_EARLY_CONTROL] < 0 || fds[WB_EARLY_ERROR_PIPE] < 0) {
      kill(pid, SIGKILL); /* (its socket or pipe gone: nothing could talk to it) */
      waitpid(pid, NULL, 0);
      pid = -1;
    }
  }
out:
  if (args_rd >= 0) close(args_rd);
  if (null >= 0) close(null);
  if (obs_theirs >= 0) close(obs_theirs);
  for (int i = 0; i < 2; ++i) {
    if (sv[i] >= 0) close(sv[i]);
    if (ep[i] >= 0) close(ep[i]);
  }
  if (pid <= 0) {
    for (int i = 0; i < WB_EARLY_FDS; ++i) {
      if (fds[i] >= 0) close(fds[i]);
      fds[i] = -1;
    }
    return -1;
  }
  return pid;
}

int main(int argc, char** argv) {
  /* A caller that ignores SIGCHLD would have the kernel reap the keeper (and, inherited,
   * wavebox-core's children) behind wavebox's back. */
  signal(SIGCHLD, SIG_DFL);
  char dir[PATH_MAX], core[PATH_MAX], shim[PATH_MAX + 64];
  if (dir_of_self(dir, sizeof dir) != 0) {
    fprintf(stderr, "wavebox: error: cannot read /proc/self/exe (is /proc mounted?)\n");
    return 125;
  }
  /* One place, fixed when this launcher was built (WB_CORE: next to it in a build tree, in
   * libexec/wavebox/ for an installed one): never a search, whose other candidates would be
   * programs a sandbox could plant and no run protects. */
  char named[PATH_MAX + 64];
  snprintf(named, sizeof named, "%s/%s", dir, WB_CORE);
  /* Its real path: the one wavebox-core sees as its own (and finds its shim beside). */
  if (!realpath(named, core) || !executable(core)) {
    fprintf(stderr, "wavebox: error: wavebox-core is not installed at %s; reinstall\n", named);
    return 125;
  }
  /* The environment wavebox-core gets: the caller's, without an entry of this name. */
  size_t n = 0;
  while (environ[n]) ++n;
  char** env = calloc(n + 2, sizeof *env);
  if (!env) return 125;
  size_t k = 0;
  const size_t name_len = sizeof WB_ENV_EARLY_LAUNCH - 1;
  for (size_t i = 0; i < n; ++i) {
    if (strncmp(environ[i], WB_ENV_EARLY_LAUNCH, name_len) == 0 && environ[i][name_len] == '=') continue;
    env[k++] = environ[i];
  }
  static char early[PATH_MAX * 2 + 256];
  char bwrap[PATH_MAX];
  const char* off = getenv("WAVEBOX_EARLY_START");
  if (argc > 1 && strcmp(argv[1], "run") == 0 && !(off && strcmp(off, "0") == 0) &&
      trusted_bwrap(bwrap, sizeof bwrap) == 0) {
    snprintf(shim, sizeof shim, "%s", core);
    char* slash = strrchr(shim, '/');
    snprintf(slash + 1, sizeof shim - (size_t)(slash + 1 - shim), "wavebox-shim");
    int fds[WB_EARLY_FDS];
    pid_t pid = executable(shim) ? start_keeper(shim, bwrap, fds) : -1;
    if (pid > 0) {
      int at = snprintf(early, sizeof early, "%s=", WB_ENV_EARLY_LAUNCH);
      for (int i = 0; i < WB_EARLY_FDS; ++i) fcntl(fds[i], F_SETFD, 0); /* inherited; wavebox-core marks them again */
      if (wb_early_encode(early + at, sizeof early - (size_t)at, (int)pid, fds, shim, bwrap) > 0) {
        env[k++] = early;
      } else { /* (cannot happen: both paths are shorter than PATH_MAX) */
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        for (int i = 0; i < WB_EARLY_FDS; ++i) close(fds[i]);
      }
    }
  }
  env[k] = NULL;
  execve(core, argv, env);
  fprintf(stderr, "wavebox: error: cannot run %s: %s\n", core, strerror(errno));
  return 125;
}

/* The wire between wavebox (C++) and wavebox-shim (C, static, no C++ library): declared once,
 * included by both sides, round-tripped by tests/unit/wire_test.cpp.
 *
 *   descriptors   bwrap --args 3 -- wavebox-shim 5 7 6 8 (WB_FD_*)
 *   ports         the proxy's listeners inside the sandbox's network namespace (WB_*_PORT)
 *   keeper steps  {step, errno} on the keeper's error pipe (struct wb_keeper_error, WB_STEP_*)
 *   socket bytes  wavebox -> keeper: WB_WORD_NET_CONFIG (below), once, at any time after the
 *                 keeper started (a sandbox can start before the settings are read);
 *                 keeper -> wavebox: WB_WORD_LISTENERS with WB_KEEPER_FDS descriptors (the
 *                 proxy's listeners, a NETLINK_SOCK_DIAG socket, DNS, transparent TCP), then
 *                 bwrap's pid;
 *                 wavebox -> shim: WB_WORD_START, a byte of which standard descriptors follow
 *                 (bit i: descriptor i), the descriptors; shim -> wavebox: WB_WORD_LISTENERS
 *                 and a byte per WB_MOUNT_FUSE_* record (WB_FUSE_SERVED: its descriptor
 *                 follows; WB_FUSE_NOT: the old mask was placed), with the seccomp listener and
 *                 then each served mask's /dev/fuse descriptor, in the list's order (wavebox
 *                 answers WB_WORD_ACK), then (WB_START_TTY) WB_WORD_STOPPED and the signal
 *                 each time the command stops, and WB_WORD_END and the command's status when
 *                 the sandbox is empty
 *                 A sandbox made ahead of its command (serve's standby): WB_WORD_START carries
 *                 WB_START_STANDBY and no descriptors; the shim places the mounts, loads the
 *                 filter, hands the listener over, then waits for WB_WORD_GO, a byte as for
 *                 WB_WORD_START, the go spec's descriptor and the standard descriptors
 *   the spec      fd 6: LIMITS, EXE ("-": search PATH), COMMAND, ARG... as NUL-terminated fields;
 *                 LIMITS is "CPU_SECONDS:PROCESSES:MEMORY_MB" (0: none)
 *   the go spec   LIMITS, EXE, CWD ("": the standby's own), N (decimal), N environment entries,
 *                 COMMAND, ARG...
 *   the mounts    fd 8: records of three NUL-terminated fields {kind, argument, path}, WB_MOUNT_* */
#ifndef WAVEBOX_SHIM_WIRE_H
#define WAVEBOX_SHIM_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { WB_FD_ARGS = 3, WB_FD_STATUS = 4, WB_FD_SECCOMP = 5, WB_FD_SPEC = 6, WB_FD_OBSERVER = 7, WB_FD_MOUNTS = 8 };
enum { WB_HTTP_PORT = 3128, WB_SOCKS_PORT = 1080, WB_DNS_PORT = 53 };
/* What the keeper hands over with WB_WORD_LISTENERS (and a byte: how many), in this order: the
 * HTTP and SOCKS listeners, the NETLINK_SOCK_DIAG socket, the resolver's UDP socket and TCP
 * listener (port 53 of every address), the transparent listeners (ports 80 and 443 of every
 * address, then each of struct wb_net_config's ports: the allowlist's own, at most
 * WB_MAX_EXTRA_PORTS). */
enum { WB_KEEPER_FDS = 7, WB_MAX_EXTRA_PORTS = 8, WB_MAX_NET_ADDRS = 32 };
/* wavebox -> keeper: WB_WORD_NET_CONFIG, then this record as it lies in memory (both ends are
 * programs of one build on one machine): the allowlist's own ports (a transparent listener each,
 * beside 80 and 443) and its IPv4 literals (addresses of the namespace's loopback, so that a direct
 * connection to one reaches the transparent listeners, which decide it as the proxy would). */
#define WB_WORD_NET_CONFIG 'N'
struct wb_net_config {
  uint8_t n_ports, n_addrs;
  uint16_t ports[WB_MAX_EXTRA_PORTS];
  uint32_t addrs[WB_MAX_NET_ADDRS]; /* network byte order */
};
/* Whether a record received is one: its counts in bounds, its ports real ones. */
static inline int wb_net_config_ok(const struct wb_net_config* c) {
  if (c->n_ports > WB_MAX_EXTRA_PORTS || c->n_addrs > WB_MAX_NET_ADDRS) return 0;
  for (int i = 0; i < c->n_ports; ++i) {
    if (c->ports[i] == 0) return 0;
  }
  return 1;
}

enum {
  WB_STEP_UNSHARE = 1,    /* creating the user and network namespace */
  WB_STEP_ID_MAPS = 2,    /* writing the id maps */
  WB_STEP_LOOPBACK = 3,   /* raising lo */
  WB_STEP_LISTENERS = 4,  /* binding the proxy's listeners */
  WB_STEP_HAND_OVER = 5,  /* sending the listeners, or bwrap's pid */
  WB_STEP_EXEC_BWRAP = 6, /* exec of bwrap */
  WB_STEP_FORK_BWRAP = 7, /* the pipe and fork before it */
  WB_STEP_CGROUP = 8,     /* wavebox's child joining the run's cgroup (sandbox.resources) */
  WB_STEP_NET_CONFIG = 9  /* receiving the allowlist's ports and addresses (WB_WORD_NET_CONFIG) */
};
struct wb_keeper_error {
  int step;
  int err;
};
static inline const char* wb_step_name(int step) {
  switch (step) {
    case WB_STEP_UNSHARE:
      return "creating the user and network namespace";
    case WB_STEP_ID_MAPS:
      return "writing the user namespace's id maps";
    case WB_STEP_LOOPBACK:
      return "raising the loopback interface";
    case WB_STEP_LISTENERS:
      return "binding the proxy listeners";
    case WB_STEP_HAND_OVER:
      return "handing the listeners over";
    case WB_STEP_EXEC_BWRAP:
      return "starting bubblewrap";
    case WB_STEP_FORK_BWRAP:
      return "starting bubblewrap as the namespace's pid 1";
    case WB_STEP_NET_CONFIG:
      return "receiving the allowlist's ports and addresses";
    case WB_STEP_CGROUP:
      return "joining the run's cgroup (sandbox.resources)";
    default:
      return "setting up the network namespace";
  }
}

/* The launcher (launcher/launcher.c, the `wavebox` a user runs) starts a run's keeper before
 * wavebox-core's libraries are even loaded, and tells wavebox-core in its environment, as
 * "PID FD FD ... FD SHIM\nBWRAP" with the descriptors in wb_early_fd order (inherited, not
 * close-on-exec) and the two paths the keeper was given. wavebox-core removes the entry before
 * anything reads its environment. */
#define WB_ENV_EARLY_LAUNCH "WAVEBOX_EARLY_LAUNCH"
enum wb_early_fd {
  WB_EARLY_STATUS_RD,
  WB_EARLY_STATUS_WR,
  WB_EARLY_ARGS_WR,
  WB_EARLY_ERR_RD,
  WB_EARLY_ERR_WR,
  WB_EARLY_OBS,
  WB_EARLY_FILTER,
  WB_EARLY_SPEC,
  WB_EARLY_MOUNTS,
  WB_EARLY_CONTROL,
  WB_EARLY_ERROR_PIPE,
  WB_EARLY_FDS
};
/* The record's value: "PID FD ... FD SHIM\nBWRAP" (WB_EARLY_FDS descriptors). Returns its
 * length, or -1 when it does not fit in n bytes. */
static inline int wb_early_encode(char* buf, size_t n, int pid, const int fds[WB_EARLY_FDS], const char* shim,
                                  const char* bwrap) {
  int at = snprintf(buf, n, "%d", pid);
  for (int i = 0; i < WB_EARLY_FDS && at >= 0 && (size_t)at < n; ++i)
    at += snprintf(buf + at, n - (size_t)at, " %d", fds[i]);
  if (at < 0 || (size_t)at >= n) return -1;
  int tail = snprintf(buf + at, n - (size_t)at, " %s\n%s", shim, bwrap);
  return tail < 0 || (size_t)(at + tail) >= n ? -1 : at + tail;
}
/* Parses a record's value: 0 and the fields (shim: shim_len bytes at *shim; bwrap: the rest, up
 * to the end of the string), or -1. Every number must be a positive decimal below 2^31. */
static inline int wb_early_decode(const char* s, int* pid, int fds[WB_EARLY_FDS], const char** shim, size_t* shim_len,
                                  const char** bwrap) {
  for (int i = -1; i < WB_EARLY_FDS; ++i) {
    if (i >= 0 && *s++ != ' ') return -1;
    long v = 0;
    const char* start = s;
    while (*s >= '0' && *s <= '9' && s - start < 10) v = v * 10 + (*s++ - '0');
    if (s == start || (*s >= '0' && *s <= '9') || v <= 0 || v > 0x7fffffff) return -1;
    if (i < 0) {
      *pid = (int)v;
    } else {
      fds[i] = (int)v;
    }
  }
  if (*s++ != ' ') return -1;
  const char* nl = strchr(s, '\n');
  if (!nl || nl == s || nl[1] == '\0') return -1;
  *shim = s;
  *shim_len = (size_t)(nl - s);
  *bwrap = nl + 1;
  return 0;
}
/* The keeper's and bwrap's own environment (wavebox never looks a program up on the caller's). */
#define WB_LAUNCH_PATH "PATH=/usr/sbin:/usr/bin:/sbin:/bin"
/* The keeper's command line: wavebox-shim keeper PID UID GID WB_KEEPER_SOCK_FD WB_KEEPER_ERR_FD
 * BWRAP --args WB_FD_ARGS -- SHIM WB_FD_SECCOMP WB_FD_OBSERVER WB_FD_SPEC WB_FD_MOUNTS */
enum { WB_KEEPER_SOCK_FD = WB_FD_MOUNTS + 1, WB_KEEPER_ERR_FD = WB_FD_MOUNTS + 2 };

#define WB_WORD_LISTENERS 'L'
#define WB_WORD_START 'M'
#define WB_WORD_END 'E'
#define WB_WORD_ACK 'A'       /* wavebox -> shim: the seccomp listener arrived */
#define WB_WORD_GO 'G'        /* wavebox -> a standby's shim: the command, now */
#define WB_START_STANDBY 0x08 /* in WB_WORD_START's byte: the command comes with WB_WORD_GO */
/* In WB_WORD_START's byte: descriptor 0 is a terminal of the sandbox's own (a pty wavebox
 * relays): the command's controlling terminal, in a session of its own; when the command stops
 * (Ctrl-Z on that terminal), the shim says WB_WORD_STOPPED and the signal. */
#define WB_START_TTY 0x10
#define WB_WORD_STOPPED 'Z'

/* Mount record kinds (bwrap/plan/plan.cpp, render_shim_mounts, writes them). */
#define WB_MOUNT_ROOT "root"             /* argument "ro" | "rw": the host's tree at / */
#define WB_MOUNT_DEV "dev"               /* argument: the terminal for /dev/console, or "" */
#define WB_MOUNT_PROC "proc"             /* argument "new" | "host" */
#define WB_MOUNT_RW "rw"                 /* a writable bind of the argument at the path */
#define WB_MOUNT_RO "ro"                 /* a read-only bind */
#define WB_MOUNT_TMPFS "tmpfs"           /* a directory mask; argument: its mode in octal */
#define WB_MOUNT_DEVICES_RO "devices-ro" /* the only record when bwrap places the mounts */
/* A read mask that reports what is looked up in it: a FUSE filesystem whose every lookup and
 * open wavebox answers EACCES and records (bwrap/supervise/fuse_masks.hpp). When it cannot be mounted,
 * the old mask: for a directory the tmpfs of mode "0000", for a file the argument bound
 * read-only (the unreadable placeholder). At most WB_MAX_FUSE_MASKS in a list. */
#define WB_MOUNT_FUSE_DIR "fuse-dir"
#define WB_MOUNT_FUSE_FILE "fuse-file"
enum { WB_MAX_FUSE_MASKS = 64 };
#define WB_FUSE_SERVED 'F'
#define WB_FUSE_NOT '-'
#define WB_ROOT_RO "ro"
#define WB_ROOT_RW "rw"
#define WB_PROC_NEW "new"
#define WB_PROC_HOST "host"

/* The next NUL-terminated field of [*p, end): its start, *p moved past it; NULL when none is
 * left or the last is not terminated. */
static inline const char* wb_next_field(const char** p, const char* end) {
  if (*p >= end) return NULL;
  const char* f = *p;
  const char* nul = (const char*)memchr(f, '\0', (size_t)(end - f));
  if (!nul) return NULL;
  *p = nul + 1;
  return f;
}

/* One mount record: 1 with its three fields, 0 at the end of the list, -1 when malformed. */
static inline int wb_next_mount(const char** p, const char* end, const char* fields[3]) {
  if (*p >= end) return 0;
  for (int i = 0; i < 3; ++i) {
    fields[i] = wb_next_field(p, end);
    if (!fields[i]) return -1;
  }
  return 1;
}

/* The number of fields of a whole spec (LIMITS, EXE, COMMAND, ARG...), or -1 when it is not one. */
static inline int wb_spec_fields(const char* buf, size_t len) {
  if (len == 0 || buf[len - 1] != '\0') return -1;
  int n = 0;
  for (size_t i = 0; i < len; ++i) n += buf[i] == '\0';
  return n >= 3 ? n : -1;
}

/* A whole go spec: 0 with *nenv (the environment's entries) when it is one, -1 otherwise
 * (LIMITS, EXE, CWD, N, N entries and at least a COMMAND, all terminated). */
static inline int wb_go_spec(const char* buf, size_t len, int* nenv) {
  if (len == 0 || buf[len - 1] != '\0') return -1;
  int n = 0;
  for (size_t i = 0; i < len; ++i) n += buf[i] == '\0';
  if (n < 5) return -1;
  const char* p = buf;
  for (int i = 0; i < 3; ++i) p += strlen(p) + 1; /* LIMITS, EXE, CWD */
  if (*p == '\0' || strlen(p) > 9 || strspn(p, "0123456789") != strlen(p)) return -1;
  int e = 0;
  for (const char* d = p; *d; ++d) e = e * 10 + (*d - '0');
  if (e > n - 5) return -1;
  *nenv = e;
  return 0;
}

struct wb_limits {
  unsigned long long cpu_seconds, processes, memory_mb;
};
/* LIMITS: 0 when it parses. */
static inline int wb_parse_limits(const char* text, struct wb_limits* l) {
  char tail;
  return sscanf(text, "%llu:%llu:%llu%c", &l->cpu_seconds, &l->processes, &l->memory_mb, &tail) == 3 ? 0 : -1;
}

#endif

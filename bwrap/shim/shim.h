/* What the shim's files share: wavebox-shim is one static program with two roles, the keeper
 * (keeper.c, outside the sandbox) and pid 1 inside it (init.c, with the mounts it places in
 * mounts.c). */
#ifndef WAVEBOX_SHIM_H
#define WAVEBOX_SHIM_H
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

#include "bwrap/shim/wire.h"

/* common.c */
/* Says what failed (errno's text) on stderr; 125, the status of a sandbox that did not start. */
int die(const char* what);
int read_full(int fd, void* buf, size_t n);
int write_file(const char* path, const char* data);
int send_fds(int sock, const int* fds, int n, const void* data, size_t len);
char* read_all(int fd, size_t* len);

/* keeper.c: `wavebox-shim keeper ...` */
int wb_keeper(int argc, char** argv);

/* mounts.c: the mount list placed in bwrap's mount namespace; the FUSE masks' connections it
 * opened, for init.c to hand to wavebox (a byte per WB_MOUNT_FUSE_* record says which). */
int place_all_mounts(int mounts_fd);
extern int fuse_served[WB_MAX_FUSE_MASKS];
extern char fuse_flags[WB_MAX_FUSE_MASKS];
extern int n_fuse_served, n_fuse_records;

#endif

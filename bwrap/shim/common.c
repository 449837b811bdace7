/* What the keeper and pid 1 both use: reading, writing, passing descriptors. */
#include "bwrap/shim/shim.h"

int die(const char* what) {
  fprintf(stderr, "wavebox: error: observer: %s: %s\n", what, strerror(errno));
  return 125;
}

/* Exactly n bytes from fd: 0, or -1 at an error or the end of file before them. */
int read_full(int fd, void* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, (char*)buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    got += (size_t)r;
  }
  return 0;
}

int write_file(const char* path, const char* data) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = write(fd, data, strlen(data));
  close(fd);
  return n == (ssize_t)strlen(data) ? 0 : -1;
}

/* The C twin of core/sys/fdpass.cpp's send_fds: this static program links no C++ library. */
int send_fds(int sock, const int* fds, int n, const void* data, size_t len) {
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

/* Reads a whole descriptor into a NUL-terminated buffer (malloc'd); NULL on error. */
char* read_all(int fd, size_t* len) {
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

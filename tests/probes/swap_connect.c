/* Swaps a descriptor between an inet and a Unix socket while another thread connects it to a
 * Unix path (test_seccomp's attack on the connect check: the check must be about the socket that
 * is connected, not one the kernel looks up again). Prints "connected" if a connect to the path
 * ever succeeded. Bounded: 5 seconds, 100000 tries. Usage: swap_connect PATH [thread] */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

enum { SLOT = 300 };
static struct sockaddr_un target;
static atomic_int done;
static int inet_fd;

static void* swap_loop(void* unused) {
  (void)unused;
  while (!atomic_load(&done)) {
    int u = socket(AF_UNIX, SOCK_STREAM, 0);
    if (u >= 0) {
      dup2(u, SLOT);
      close(u);
    }
    dup2(inet_fd, SLOT);
  }
  return NULL;
}

static void* connect_loop(void* unused) {
  (void)unused;
  time_t end = time(NULL) + 5;
  long tries = 0;
  for (; tries < 100000 && time(NULL) < end; ++tries) {
    if (connect(SLOT, (struct sockaddr*)&target, sizeof target) == 0) {
      printf("connected after %ld tries\n", tries);
      atomic_store(&done, 1);
      return (void*)1;
    }
  }
  printf("never connected (%ld tries)\n", tries);
  atomic_store(&done, 1);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2 || strlen(argv[1]) >= sizeof target.sun_path) return 2;
  target.sun_family = AF_UNIX;
  strcpy(target.sun_path, argv[1]);
  inet_fd = socket(AF_INET, SOCK_STREAM, 0);
  dup2(inet_fd, SLOT);
  pthread_t swapper, connector;
  pthread_create(&swapper, NULL, swap_loop, NULL);
  void* hit = NULL;
  if (argc > 2 && strcmp(argv[2], "thread") == 0) {
    pthread_create(&connector, NULL, connect_loop, NULL);
    pthread_join(connector, &hit);
  } else {
    hit = connect_loop(NULL);
  }
  pthread_join(swapper, NULL);
  return hit ? 1 : 0;
}

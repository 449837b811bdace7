/* wavebox-shim's first role, the keeper (the second, pid 1 inside the sandbox, is init.c):
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
 *     stays pid 1 there: when it dies, the kernel ends every process of the namespace and below. */
#include "bwrap/shim/shim.h"

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
 * literals the allowlist names (struct wb_net_config: a direct connection to one reaches the proxy's
 * transparent listeners, which decide it as the proxy would). */
static void add_local_addresses(const struct wb_net_config* net) {
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
  for (int i = 0; i < net->n_addrs; ++i) {
    struct in_addr in = {net->addrs[i]};
    add_loopback_address(nl, in, seq++);
  }
  close(nl);
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

/* In the keeper's network namespace: the loopback up, the proxy's, resolver's and transparent
 * listeners bound, and a socket-diagnostics socket; their count (fds in WB_WORD_LISTENERS's
 * order). A step that fails ends the keeper, saying which. */
static int make_listeners(int errfd, const struct wb_net_config* net, int fds[WB_KEEPER_FDS + WB_MAX_EXTRA_PORTS]) {
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
  add_local_addresses(net);
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
  for (int i = 0; i < net->n_ports; ++i) {
    const int port = net->ports[i];
    if (port == 80 || port == 443 || port == WB_HTTP_PORT || port == WB_SOCKS_PORT || port == WB_DNS_PORT) continue;
    int l = any_address(SOCK_STREAM, port);
    if (l < 0) fail_step(errfd, WB_STEP_LISTENERS);
    fds[nfds++] = l;
  }
  return nfds;
}

int wb_keeper(int argc, char** argv) {
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
   * started us before). */
  char word;
  struct wb_net_config net;
  if (read_full(sock, &word, 1) != 0 || word != WB_WORD_NET_CONFIG || read_full(sock, &net, sizeof net) != 0 ||
      !wb_net_config_ok(&net))
    fail_step(errfd, WB_STEP_NET_CONFIG);
  int fds[WB_KEEPER_FDS + WB_MAX_EXTRA_PORTS];
  const int nfds = make_listeners(errfd, &net, fds);
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

// pure
#include "seatbelt/profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/paths.hpp"
#include "core/protect.hpp"

namespace wb::seatbelt {

const std::vector<std::string>& strict_system_paths() {
  static const std::vector<std::string> paths = {"/usr",
                                                 "/bin",
                                                 "/sbin",
                                                 "/System",
                                                 "/Library",
                                                 "/opt",
                                                 "/private/etc",
                                                 "/dev",
                                                 "/private/var/select",
                                                 "/private/var/db/timezone",
                                                 "/private/var/db/dyld"};
  return paths;
}

const std::vector<Allowance>& mach_services() {
  static const std::vector<Allowance> k = {
      {"com.apple.system.opendirectoryd.libinfo", "user and group names (getpwuid: id, git, ssh, python)"},
      {"com.apple.system.opendirectoryd.membership", "group membership checks (access, getgrouplist)"},
      {"com.apple.system.DirectoryService.libinfo_v1", "user and group names on older systems"},
      {"com.apple.system.notification_center", "libc notifications (time zone changes, log levels)"},
      {"com.apple.system.logger", "syslog(3)"},
      {"com.apple.logd", "os_log: the command's own log lines"},
      {"com.apple.bsd.dirhelper", "the per-user temporary and cache directories (confstr)"},
      {"com.apple.trustd", "certificate checks for TLS clients using the system's trust store"},
      {"com.apple.trustd.agent", "certificate checks for TLS clients (per-user trust settings)"},
      {"com.apple.FSEvents", "file watching (build tools, test runners in watch mode)"},
      // Not allowed, on purpose: com.apple.cfprefsd.agent (writes any app's preferences, which the
      // host then runs with: persistence), com.apple.SecurityServer and securityd (the keychain:
      // credentials), com.apple.coreservices.launchservicesd and lsd (opens apps outside the
      // sandbox), com.apple.pasteboard.1 (the clipboard), mDNSResponder (DNS leaves the sandbox:
      // the proxy resolves).
  };
  return k;
}

const std::vector<Allowance>& sysctls() {
  static const std::vector<Allowance> k = {
      {"hw.", "CPU count, memory size, page size, CPU features (build tools size their jobs)"},
      {"machdep.cpu.", "CPU brand and features (compilers, numeric libraries)"},
      {"machdep.ptrauth_enabled", "pointer authentication (JITs)"},
      {"kern.osrelease", "uname(3)"},
      {"kern.ostype", "uname(3)"},
      {"kern.osversion", "uname(3)"},
      {"kern.osproductversion", "the macOS version (python's platform module)"},
      {"kern.osvariant_status", "read by libsystem at start"},
      {"kern.version", "uname(3)"},
      {"kern.hostname", "gethostname(3)"},
      {"kern.argmax", "the longest command line (xargs, make)"},
      {"kern.maxproc", "process limits"},
      {"kern.maxfilesperproc", "descriptor limits (node, python)"},
      {"kern.maxfiles", "descriptor limits"},
      {"kern.usrstack64", "the stack's address (thread libraries)"},
      {"kern.boottime", "uptime"},
      {"kern.ngroups", "group list size"},
      {"kern.secure_kernel", "read by libsystem at start"},
      {"kern.willshutdown", "read by libsystem at start"},
      {"kern.proc.pid.", "a process's own status (libproc, Go and Rust runtimes, ps of its children)"},
      {"sysctl.proc_cputype", "which architecture this process runs as"},
      {"sysctl.proc_translated", "whether it runs under Rosetta"},
      {"vm.loadavg", "load average (make -l, test runners)"},
      {"vm.pagesize", "page size"},
  };
  return k;
}

Result<std::string> canonical_path(std::string_view raw) {
  if (raw.empty() || raw[0] != '/') {
    return make_error(ErrorKind::kSandboxFailed, fmt::format("\"{}\" is not an absolute path", raw));
  }
  size_t i = 0;
  while (i < raw.size()) {
    while (i < raw.size() && raw[i] == '/') ++i;
    size_t j = raw.find('/', i);
    if (j == std::string_view::npos) j = raw.size();
    if (raw.substr(i, j - i) == "..") {
      return make_error(ErrorKind::kSandboxFailed,
                        fmt::format("\"{}\" holds \"..\"; name the directory it means", raw));
    }
    i = j;
  }
  std::string p = paths::normalize(raw);
  for (const char* top : {"/tmp", "/var", "/etc"}) {
    if (paths::is_within(p, top)) return "/private" + p;
  }
  return p;
}

namespace {

std::string any_of(const std::vector<std::string>& f) {
  if (f.size() == 1) return f[0];
  std::string out = "(require-any";
  for (const auto& x : f) out += " " + x;
  return out + ")";
}

std::string all_of(const std::vector<std::string>& f) {
  if (f.size() == 1) return f[0];
  std::string out = "(require-all";
  for (const auto& x : f) out += " " + x;
  return out + ")";
}

std::string none_of(const std::vector<std::string>& f) {
  return "(require-not " + any_of(f) + ")";
}

// An SBPL regex matching the name (one or more components) as whole path components, anywhere,
// in any case: the Mac's volumes are case-insensitive by default, and a name that does not exist
// yet is matched as the caller spells it (.WAVE/settings.json is read as .wave/settings.json).
std::string name_regex(const std::string& name) {
  std::string re;
  for (char c : name) {
    if (c >= 'a' && c <= 'z') {
      re += '[';
      re += static_cast<char>(c - 'a' + 'A');
      re += c;
      re += ']';
    } else if (c >= 'A' && c <= 'Z') {
      re += '[';
      re += c;
      re += static_cast<char>(c - 'A' + 'a');
      re += ']';
    } else {
      if (std::string_view(".^$*+?()[]{}|\\\"").find(c) != std::string_view::npos) re += '\\';
      re += c;
    }
  }
  return "(regex #\"/" + re + "(/|$)\")";
}

class Params {
 public:
  explicit Params(Profile& p) : p_(p) {}
  // The parameter holding this (canonical) path, one per distinct path and prefix.
  Result<std::string> path(const std::string& prefix, const std::string& raw) {
    if (paths::has_glob(raw)) {
      return make_error(ErrorKind::kSandboxFailed,
                        fmt::format("\"{}\" still holds a glob; the profile takes the paths it matches", raw));
    }
    std::string c = WB_TRY(canonical_path(raw));
    auto key = std::make_pair(prefix, c);
    if (auto it = keys_.find(key); it != keys_.end()) return it->second;
    std::string name = fmt::format("{}_{}", prefix, count_[prefix]++);
    p_.params.emplace_back(name, c);
    std::string ref = fmt::format("(param \"{}\")", name);
    keys_[key] = ref;
    canon_[ref] = c;
    return ref;
  }
  std::string value(const std::string& ref) const { return canon_.at(ref); }

 private:
  Profile& p_;
  std::map<std::pair<std::string, std::string>, std::string> keys_;
  std::map<std::string, std::string> canon_;
  std::map<std::string, int> count_;
};

std::string subpath(const std::string& ref) {
  return "(subpath " + ref + ")";
}
std::string literal(const std::string& ref) {
  return "(literal " + ref + ")";
}

bool valid_tag(const std::string& tag) {
  if (tag.empty() || tag.size() > 64) return false;
  return std::all_of(tag.begin(), tag.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

// Reads: denyRead and allowRead, the most specific entry deciding (an allowRead inside a denyRead
// lifts that part of it, a denyRead inside that lifts it again). Each entry's region is its tree
// minus the entries deeper in it, so the regions never overlap.
Status read_rules(const ProfileInput& in, Params& P, std::string& t) {
  const FsPolicy& fs = in.fs;
  struct Entry {
    std::string ref, path;
    bool allow;
  };
  std::vector<Entry> entries;
  auto add = [&](const std::string& raw, bool allow) -> Status {
    std::string ref = WB_TRY(P.path(allow ? "READ_ALLOW" : "READ_DENY", raw));
    std::string c = P.value(ref);
    for (auto& e : entries) {
      if (e.path == c) return ok_status();  // a denyRead of the same path stays denied
    }
    entries.push_back({ref, c, allow});
    return ok_status();
  };
  for (const auto& d : fs.deny_read) WB_TRY(add(d.path, false));
  for (const auto& a : fs.allow_read) WB_TRY(add(a, true));
  auto region = [&](const Entry& e) {
    std::vector<std::string> inner;
    for (const auto& o : entries) {
      if (o.path != e.path && paths::is_within(o.path, e.path)) inner.push_back(subpath(o.ref));
    }
    if (inner.empty()) return subpath(e.ref);
    return all_of({subpath(e.ref), none_of(inner)});
  };
  std::vector<std::string> all;
  for (const auto& e : entries) all.push_back(subpath(e.ref));
  const std::string base = all.empty() ? "" : none_of(all);
  if (fs.strict) {
    std::vector<std::string> visible;
    std::vector<std::string> trees = strict_system_paths();
    for (const auto& w : fs.writable) trees.push_back(w.path);
    trees.insert(trees.end(), fs.visible.begin(), fs.visible.end());
    for (const auto& v : trees) visible.push_back(subpath(WB_TRY(P.path("VISIBLE", v))));
    t += "; mode strict: names resolve everywhere, contents only in the system trees and the policy's\n";
    t += base.empty() ? "(allow file-read-metadata)\n" : "(allow file-read-metadata " + base + ")\n";
    std::vector<std::string> f = {any_of(visible), "(require-not (regex #\"^/dev/ttys[0-9]+$\"))"};
    if (!base.empty()) f.push_back(base);
    t += "(allow file-read* " + all_of(f) + ")\n";
  } else {
    // Every terminal but the command's own (a parameter) and the ptys it opens: another tab's
    // tty is the user's, and what is typed there (a sudo password) is not the command's to read.
    std::vector<std::string> f = {"(require-not (regex #\"^/dev/ttys[0-9]+$\"))"};
    if (!base.empty()) f.push_back(base);
    t += "(allow file-read* " + all_of(f) + ")\n";
  }
  for (const auto& e : entries) {
    if (e.allow) t += "(allow file-read* " + region(e) + ")\n";
  }
  return ok_status();
}

// Writes: the writable roots, minus denyWrite and the protected table (paths, the names at any
// depth, what the scan found), minus every ancestor of a protected path inside a writable root
// (renamed or removed, the path would come back as the command's own).
Status write_rules(const ProfileInput& in, Params& P, std::string& t) {
  const FsPolicy& fs = in.fs;
  std::vector<std::string> roots, roots_canon;
  // Roots writable inside a guarded tree (the cache dir in the state, a zone's carve-outs), with
  // their paths: the guards inside them still hold there.
  std::vector<std::pair<std::string, std::string>> over;
  for (const auto& w : fs.writable) {
    std::string ref = WB_TRY(P.path("WRITABLE", w.path));
    if (w.over_guard) {
      over.push_back({P.value(ref), subpath(ref)});
    } else {
      roots.push_back(subpath(ref));
    }
    roots_canon.push_back(P.value(ref));
  }
  if (roots.empty() && over.empty()) return ok_status();
  std::vector<std::string> guarded, excluded, guarded_canon;
  std::vector<std::string> anc_seen;
  auto add_guard = [&](const std::string& raw) -> Status {
    std::string ref = WB_TRY(P.path("DENY_WRITE", raw));
    guarded.push_back(subpath(ref));
    std::string c = P.value(ref);
    guarded_canon.push_back(c);
    for (const auto& a : paths::ancestors(c)) {
      bool inside = std::any_of(roots_canon.begin(), roots_canon.end(),
                                [&](const std::string& r) { return paths::is_within(a, r); });
      if (!inside || std::find(anc_seen.begin(), anc_seen.end(), a) != anc_seen.end()) continue;
      anc_seen.push_back(a);
      excluded.push_back(literal(WB_TRY(P.path("ANCESTOR", a))));
    }
    return ok_status();
  };
  for (const auto& g : fs.deny_write) WB_TRY(add_guard(g.path));
  for (const auto& g : in.found) WB_TRY(add_guard(g.path));
  // A zone (wavebox's state beside TMPDIR, a repository's modules/): nothing new may appear in
  // it, which a profile without state can only say as "nothing in it is written", except below
  // its carve-outs.
  for (const auto& z : fs.zones) {
    WB_TRY(add_guard(z.dir));
    for (const auto& c : z.carve) {
      std::string ref = WB_TRY(P.path("WRITABLE", c));
      over.push_back({P.value(ref), subpath(ref)});
    }
  }
  // The names at any depth are constants of ours: they may stand in the text.
  // The workspace's rows too (a shell's rc file, .gitconfig): a profile cannot anchor a pattern
  // at the workspace without its path in the text, so on macOS they are refused at any depth. The
  // home rows likewise when home itself is writable (a case-changed ~/.SSH would be ~/.ssh).
  bool home_writable = false;
  if (auto home = canonical_path(in.home); home.ok()) {
    for (const auto& r : roots_canon) home_writable |= paths::is_within(*home, r);
  }
  for (const auto& e : protected_table()) {
    if (e.scope == ProtectScope::kAnyDepth || e.scope == ProtectScope::kWorkspace ||
        (e.scope == ProtectScope::kHome && home_writable)) {
      std::string re = name_regex(e.rel);
      if (std::find(excluded.begin(), excluded.end(), re) == excluded.end()) excluded.push_back(re);
    }
  }
  // HEAD beside objects/ and refs/ makes a directory a bare repository git trusts: HEAD is
  // written only in a git directory (one named .git, or one the scan found).
  std::vector<std::string> head_ok = {"(regex #\"/\\.[gG][iI][tT]/\")"};
  for (const auto& r : in.repositories) head_ok.push_back(subpath(WB_TRY(P.path("REPOSITORY", r))));
  excluded.push_back(all_of({"(regex #\"/[hH][eE][aA][dD]$\")", none_of(head_ok)}));
  auto uniq = [](std::vector<std::string>& v) {
    std::vector<std::string> out;
    for (auto& x : v) {
      if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
    }
    v = out;
  };
  std::vector<std::string> writable;
  if (!roots.empty()) {
    std::vector<std::string> g = guarded;
    uniq(g);
    writable.push_back(g.empty() ? any_of(roots) : all_of({any_of(roots), none_of(g)}));
  }
  // An over root escapes the guard it lies in, never one that lies in it (a guard inside the
  // cache dir, or inside another root over which a carve-out is made).
  for (const auto& [canon, expr] : over) {
    std::vector<std::string> inner;
    for (size_t i = 0; i < guarded.size(); ++i) {
      if (guarded_canon[i] != canon && paths::is_within(guarded_canon[i], canon)) inner.push_back(guarded[i]);
    }
    uniq(inner);
    std::string e = inner.empty() ? expr : all_of({expr, none_of(inner)});
    if (std::find(writable.begin(), writable.end(), e) == writable.end()) writable.push_back(e);
  }
  t += "(allow file-write* " + all_of({any_of(writable), none_of(excluded)}) + ")\n";
  return ok_status();
}

Status network_rules(const ProfileInput& in, Params& P, std::string& t) {
  const NetRules& n = in.net;
  if (n.open) {
    t += "(allow network*)\n";
    return ok_status();
  }
  // Unix sockets: the ones the command makes itself, in its own TMPDIR (multiprocessing, asyncio
  // servers, test suites), and those allowUnixSockets names. Every other one is the host's.
  std::vector<std::string> own, named;
  if (!in.tmpdir.empty()) own.push_back(subpath(WB_TRY(P.path("TMPDIR", in.tmpdir))));
  for (const auto& s : n.unix_sockets) named.push_back(subpath(WB_TRY(P.path("UNIX_SOCKET", s))));
  t += "(allow system-socket (socket-domain AF_UNIX))\n";
  if (!own.empty()) t += "(allow network-bind (local unix-socket " + any_of(own) + "))\n";
  std::vector<std::string> remote;
  if (n.off) {
    // --network off: the command's own sockets only.
    if (!own.empty()) remote.push_back("(remote unix-socket " + any_of(own) + ")");
  } else if (n.all_unix_sockets) {
    remote.push_back("(remote unix-socket)");
  } else {
    own.insert(own.end(), named.begin(), named.end());
    if (!own.empty()) remote.push_back("(remote unix-socket " + any_of(own) + ")");
  }
  // Only the proxy's own listeners: a rule on the local address of an outbound connection would
  // match every connection (each has one).
  if (!n.off) {
    for (int port : {n.http_port, n.socks_port}) {
      if (port > 0 && port < 65536) remote.push_back(fmt::format("(remote ip \"localhost:{}\")", port));
    }
  }
  if (!remote.empty()) t += "(allow network-outbound " + any_of(remote) + ")\n";
  if (n.allow_local_binding && !n.off) {
    t += "(allow network-bind (local ip \"*:*\"))\n";
    t += "(allow network-inbound (local ip \"*:*\"))\n";
  }
  return ok_status();
}

}  // namespace

Result<Profile> render_profile(const ProfileInput& in) {
  if (!valid_tag(in.tag)) {
    return make_error(ErrorKind::kSandboxFailed, "the run's log tag must be 1-64 letters, digits, '-' or '_'");
  }
  Profile p;
  Params P(p);
  std::string& t = p.text;
  t += "(version 1)\n";
  t += fmt::format("(deny default (with message \"{}\"))\n", in.tag);
  t += "(allow process-fork)\n";
  if (in.fs.strict) {
    // Mode strict: the command itself (and the helper that starts it) is the only
    // program that may be executed.
    std::vector<std::string> progs = {literal(WB_TRY(P.path("COMMAND", in.command)))};
    if (!in.helper.empty()) progs.push_back(literal(WB_TRY(P.path("HELPER", in.helper))));
    t += "(allow process-exec " + any_of(progs) + ")\n";
  } else {
    t += "(allow process-exec)\n";
  }
  t += "(allow signal process-info* (target same-sandbox))\n";
  std::vector<std::string> sys;
  for (const auto& s : sysctls()) {
    std::string name = s.name;
    sys.push_back(name.back() == '.' ? fmt::format("(sysctl-name-prefix \"{}\")", name)
                                     : fmt::format("(sysctl-name \"{}\")", name));
  }
  t += "(allow sysctl-read " + any_of(sys) + ")\n";
  std::vector<std::string> mach;
  for (const auto& m : mach_services()) mach.push_back(fmt::format("(global-name \"{}\")", m.name));
  t += "(allow mach-lookup " + any_of(mach) + ")\n";
  t += "(allow iokit-open (iokit-registry-entry-class \"RootDomainUserClient\"))\n";
  // Kernel control sockets: how getifaddrs and the system's network libraries learn the interfaces.
  t += "(allow system-socket (require-all (socket-domain AF_SYSTEM) (socket-protocol 2)))\n";
  t += "(allow ipc-posix-sem)\n";
  t += "(allow ipc-posix-shm-read-data (ipc-posix-name \"apple.shm.notification_center\"))\n";
  t += "(allow user-preference-read)\n";
  // Terminals. The controlling one (/dev/tty) and ptys the command opens itself (the pty
  // extension) may be read and written; any tty's descriptor it inherited takes ioctls (job
  // control, window size). Opening another terminal of the user's is refused: TIOCSTI on it would
  // type commands into that shell.
  t += "(allow pseudo-tty)\n";
  t += "(allow file-read* file-write* file-ioctl (literal \"/dev/tty\") (literal \"/dev/ptmx\"))\n";
  t += "(allow file-read* file-write* (require-all (regex #\"^/dev/ttys[0-9]+$\") "
       "(extension \"com.apple.sandbox.pty\")))\n";
  t += "(allow file-ioctl (regex #\"^/dev/ttys[0-9]+$\"))\n";
  if (!in.own_tty.empty()) {
    t += "(allow file-read* file-write* file-ioctl (literal " + WB_TRY(P.path("OWN_TTY", in.own_tty)) + "))\n";
  }
  t += "(allow file-write-data file-ioctl (literal \"/dev/null\") (literal \"/dev/zero\") "
       "(literal \"/dev/dtracehelper\") (regex #\"^/dev/fd/[0-9]+$\"))\n";
  if (!in.fs.enabled) {
    // Network-only settings: the filesystem as the user has it, reads and writes.
    t += "(allow file-read* file-write*)\n";
  } else {
    WB_TRY(read_rules(in, P, t));
    WB_TRY(write_rules(in, P, t));
  }
  WB_TRY(network_rules(in, P, t));
  return p;
}

}  // namespace wb::seatbelt

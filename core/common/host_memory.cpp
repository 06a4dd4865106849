#include "core/common/host_memory.h"

#include <sys/resource.h>

#include <fstream>
#include <sstream>

namespace gptrain {

namespace {

std::optional<uint64_t> read_number(const std::string& path) {
  std::ifstream f(path);
  std::string text;
  if (!(f >> text) || text == "max") return std::nullopt;
  try {
    return std::stoull(text);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// A "Key:   1234 kB" line of /proc/meminfo or /proc/self/status, in bytes.
std::optional<uint64_t> kib_field(const std::string& path, const std::string& key) {
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream s(line);
    std::string k;
    uint64_t kib = 0;
    if (s >> k >> kib && k == key) return kib * 1024;
  }
  return std::nullopt;
}

// A limit's headroom: what is left of `limit` after `used` (0 when used is over it).
uint64_t left(uint64_t limit, uint64_t used) { return limit > used ? limit - used : 0; }

// The soft resource limit, nullopt when unlimited.
std::optional<uint64_t> soft_rlimit(int resource) {
  rlimit r{};
  if (::getrlimit(resource, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return std::nullopt;
  return static_cast<uint64_t>(r.rlim_cur);
}

// This process's cgroup path for a hierarchy of /proc/self/cgroup ("" for v2's "0::/path", else the
// controller's name, e.g. "memory" for v1).
std::optional<std::string> cgroup_path(const std::string& controller) {
  std::ifstream f("/proc/self/cgroup");
  std::string line;
  while (std::getline(f, line)) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    std::istringstream list(controllers);
    bool match = controller.empty() && controllers.empty();
    for (std::string c; !controller.empty() && std::getline(list, c, ',');) match = match || c == controller;
    if (match) return line.substr(b + 1);
  }
  return std::nullopt;
}

// The tightest cgroup limit on this process: its cgroup's and every ancestor's (the mount may show the
// process's own cgroup at the root, as in a container: that one is tried too).
std::optional<AvailableMemory> cgroup_memory() {
  std::optional<AvailableMemory> best;
  auto consider = [&](uint64_t room, const std::string& where) {
    if (!best || room < best->bytes)
      best = AvailableMemory{room, "left under the cgroup's memory limit (" + where + ")"};
  };
  auto walk = [&](const std::string& root, std::string path, const char* max_file, const char* cur_file) {
    for (;;) {
      const std::string dir = root + (path == "/" ? "" : path);
      const auto max = read_number(dir + "/" + max_file), cur = read_number(dir + "/" + cur_file);
      // cgroup v1 writes "no limit" as a number near 2^63.
      if (max && cur && *max < (uint64_t(1) << 60)) consider(left(*max, *cur), dir + "/" + max_file);
      if (path.empty() || path == "/") break;
      const auto slash = path.rfind('/');
      path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
    }
  };
  walk("/sys/fs/cgroup", cgroup_path("").value_or("/"), "memory.max", "memory.current");
  walk("/sys/fs/cgroup/memory", cgroup_path("memory").value_or("/"), "memory.limit_in_bytes", "memory.usage_in_bytes");
  if (cgroup_path("memory").value_or("/") != "/")
    walk("/sys/fs/cgroup/memory", "/", "memory.limit_in_bytes", "memory.usage_in_bytes");
  return best;
}

}  // namespace

std::optional<uint64_t> address_space_limit() { return soft_rlimit(RLIMIT_AS); }

uint64_t address_space_used() { return kib_field("/proc/self/status", "VmSize:").value_or(0); }

std::optional<uint64_t> address_space_left() {
  const auto as = address_space_limit();
  if (!as) return std::nullopt;
  return left(*as, address_space_used());
}

std::optional<uint64_t> cgroup_memory_left() {
  const std::optional<AvailableMemory> m = cgroup_memory();
  return m ? std::optional<uint64_t>(m->bytes) : std::nullopt;
}

std::optional<AvailableMemory> available_memory() {
  std::optional<AvailableMemory> best;
  auto consider = [&](std::optional<AvailableMemory> m) {
    if (m && (!best || m->bytes < best->bytes)) best = m;
  };
  if (const auto avail = kib_field("/proc/meminfo", "MemAvailable:"))
    consider(AvailableMemory{*avail, "of memory available (MemAvailable)"});
  if (const auto as = address_space_left())
    consider(AvailableMemory{*as, "left under the address-space limit (ulimit -v)"});
  if (const auto data = soft_rlimit(RLIMIT_DATA))
    consider(AvailableMemory{left(*data, kib_field("/proc/self/status", "VmData:").value_or(0)),
                             "left under the data-segment limit (ulimit -d)"});
  consider(cgroup_memory());
  return best;
}

}  // namespace gptrain

#pragma once
// Pure path arithmetic on absolute POSIX paths: no file system access.
#include <string>
#include <string_view>
#include <vector>

namespace wb::paths {

// Lexically normalises an absolute path: collapses "//", ".", "..", drops a trailing "/".
std::string normalize(std::string_view path);
// Resolves a settings path: "~" and "~/x" against home, "//x" and "/x" as absolute, anything else
// relative to base_dir. The result is normalised.
std::string resolve(std::string_view raw, std::string_view home, std::string_view base_dir);
// True when path equals root or lies below it (both normalised).
bool is_within(std::string_view path, std::string_view root);
// Names compared as a case-insensitive volume compares them (WSL's /mnt/c, SMB, FAT, exFAT,
// casefold directories; macOS by default): ASCII letters without case. The guards compare so on
// every file system: refusing ".WAVE" where it is another name costs nothing, missing it where
// it is ".wave" hands the sandbox its settings.
bool same_name(std::string_view a, std::string_view b);
// is_within, with names compared as same_name compares them.
bool is_within_any_case(std::string_view path, std::string_view root);
// Number of components: "/" is 0, "/a" is 1, "/a/b" is 2.
int depth(std::string_view path);
std::string parent(std::string_view path);
std::string basename(std::string_view path);
std::string join(std::string_view dir, std::string_view name);
// The entries of the PATH in an environment ("K=V" strings), in order, empty ones kept (a shell
// reads an empty entry as "."); none when there is no PATH.
std::vector<std::string> path_entries(const std::vector<std::string>& env);
// Every proper ancestor of path, from "/" down to its parent.
std::vector<std::string> ancestors(std::string_view path);
// True when the path holds a glob metacharacter (* ? [).
bool has_glob(std::string_view path);
// Whether an absolute path matches a settings glob: "*", "?" and "[...]" within one component,
// "**" for any number of components (none included); "dir/**" matches dir and all below it.
// Without case, as same_name compares names.
bool glob_matches(std::string_view pattern, std::string_view path);
// The names of a path, in order ("/a//b/" is {"a", "b"}); views into p.
std::vector<std::string_view> components(std::string_view p);

}  // namespace wb::paths

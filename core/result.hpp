#pragma once
// Result<T> and Error: the one error type of wavebox, returned rather than thrown.
#include <string>
#include <utility>
#include <variant>

namespace wb {

// Each kind maps to one exit status in cli/exit_codes (the only place that decides them).
enum class ErrorKind {
  kUsage,          // bad command line
  kSettings,       // a settings file is missing, malformed or has a wrong type
  kUnavailable,    // the sandbox cannot run on this machine
  kSandboxFailed,  // the sandbox was chosen but could not be set up
  kDenied,         // a permission rule refused the command
  kNeedsApproval,  // the decision is "ask" and no approval was given (125)
  kNotFound,       // the command does not exist (127)
  kNotExecutable,  // the command exists but cannot be executed (126)
  kSystem,         // a system call failed
};

struct Error {
  ErrorKind kind;
  std::string message;
};

inline Error make_error(ErrorKind kind, std::string message) {
  return Error{kind, std::move(message)};
}

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  T& operator*() { return std::get<0>(v_); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

struct Unit {};
using Status = Result<Unit>;
inline Status ok_status() {
  return Unit{};
}

}  // namespace wb

// TRY(expr): evaluates a Result; returns its Error from the enclosing function, else yields the
// value (a GNU statement expression, supported by g++ and clang).
#define WB_TRY(expr)                               \
  ({                                               \
    auto wb_try_r_ = (expr);                       \
    if (!wb_try_r_.ok()) return wb_try_r_.error(); \
    std::move(wb_try_r_).value();                  \
  })

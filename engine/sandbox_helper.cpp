#include "engine/sandbox_helper.hpp"

#include <cstring>

#include "seatbelt/helper.hpp"
#include "seatbelt/plan.hpp"

namespace wb::engine {

bool helper_call(int argc, char** argv) {
  return argc > 1 && std::strcmp(argv[1], seatbelt::kHelperArg) == 0;
}

int helper_main(int argc, char** argv) {
  return seatbelt::helper_main(argc, argv);
}

}  // namespace wb::engine

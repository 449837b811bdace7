#include "core/base64.hpp"

#include <catch2/catch.hpp>

using namespace wb;

TEST_CASE("base64: RFC 4648 vectors round-trip") {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, coded] : vectors) {
    CHECK(base64_encode(plain) == coded);
    CHECK(base64_decode(coded) == std::string(plain));
  }
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  CHECK(base64_decode(base64_encode(all)) == all);
}

TEST_CASE("base64: malformed input is refused") {
  for (const char* bad : {"Zg=", "Zm9v\n", "Zg==Zg==", "Z===", "Zm9*", "=Zm9"}) CHECK(!base64_decode(bad));
}

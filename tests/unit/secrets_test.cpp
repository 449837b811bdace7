// core/secrets: the variables kept out of the sandbox by default, by name or by value.
#include "core/secrets.hpp"

#include <algorithm>
#include <catch2/catch.hpp>

using namespace wb;

TEST_CASE("secrets: common credential variables are kept out by default") {
  for (const char* n : {"GITHUB_TOKEN", "GITHUB_PAT", "GH_PAT", "TF_TOKEN_app_terraform_io",
                        "npm_config_//registry.npmjs.org/:_authToken", "npm_config__auth", "SECRET_KEY",
                        "SECRET_KEY_BASE", "DEPLOY_KEY", "OPENAI_API_KEY", "SIGNING_KEY_PASSPHRASE", "GPG_PASSPHRASE",
                        "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "STRIPE_SECRET_KEY", "SENTRY_DSN"}) {
    CAPTURE(n);
    CHECK(is_credential_variable(n));
  }
  for (const char* n : {"PATH", "HOME", "LANG", "TERM", "SSH_PUBLIC_KEY", "EDITOR", "CI", "npm_config_cache"}) {
    CAPTURE(n);
    CHECK_FALSE(is_credential_variable(n));
  }
}

TEST_CASE("secrets: a URL with a password is a secret whatever its name") {
  CHECK(is_credential_value("postgres://app:s3cret@db.internal:5432/app"));
  CHECK(is_credential_value("redis://:s3cret@cache:6379/0"));
  CHECK(is_credential_value("https://user:ghp_x@github.com/org/repo.git"));
  CHECK_FALSE(is_credential_value("postgres://db.internal:5432/app"));
  CHECK_FALSE(is_credential_value("https://user@github.com/x"));
  CHECK_FALSE(is_credential_value("https://example.com/a:b@c"));
  CHECK_FALSE(is_credential_value("plain text: with@sign"));
  auto env = without_credentials({"DATABASE_URL=postgres://a:b@h/d", "HOMEPAGE=https://example.com", "A=1"}, {});
  CHECK(env == std::vector<std::string>{"HOMEPAGE=https://example.com", "A=1"});
}

TEST_CASE("tools' configuration files are shown without their credentials") {
  const std::string npmrc =
      "registry=https://registry.npmjs.org/\n"
      "//registry.npmjs.org/:_authToken=npm_SECRET1\n"
      "  //npm.corp.example/:_auth = dXNlcjpTRUNSRVQy\n"
      "_password=SECRET3\n"
      "@corp:registry=https://user:SECRET4@npm.corp.example/\n"
      "; _authToken=commented-out stays as written\n"
      "always-auth=true\n"
      "email=me@example.org";
  std::string out = wb::without_credential_lines(npmrc, ".npmrc");
  for (const char* secret : {"SECRET1", "SECRET2", "dXNlcjpTRUNSRVQy", "SECRET3", "SECRET4"}) {
    INFO(secret);
    CHECK(out.find(secret) == std::string::npos);
  }
  // What npm needs besides: the registries, the scopes, the other settings, the line count.
  CHECK(out.find("registry=https://registry.npmjs.org/\n") == 0);
  CHECK(out.find("@corp:registry=https://npm.corp.example/\n") != std::string::npos);
  CHECK(out.find("always-auth=true\n") != std::string::npos);
  CHECK(out.find("email=me@example.org") != std::string::npos);
  CHECK(out.find("; _authToken=commented-out stays as written") != std::string::npos);
  CHECK(std::count(out.begin(), out.end(), '\n') == std::count(npmrc.begin(), npmrc.end(), '\n'));

  const std::string yarnrc =
      "npmRegistryServer: \"https://registry.yarnpkg.com\"\n"
      "npmAuthToken: SECRET5\n"
      "npmScopes:\n"
      "  corp:\n"
      "    npmAlwaysAuth: true\n"
      "    npmAuthIdent: \"user:SECRET6\"\n"
      "yarnPath: .yarn/releases/yarn-4.js\n";
  std::string y = wb::without_credential_lines(yarnrc, ".yarnrc.yml");
  CHECK(y.find("SECRET5") == std::string::npos);
  CHECK(y.find("SECRET6") == std::string::npos);
  CHECK(y.find("    # a credential") != std::string::npos);  // YAML: a comment at the same indent
  CHECK(y.find("npmAlwaysAuth: true") != std::string::npos);
  CHECK(y.find("yarnPath: .yarn/releases/yarn-4.js") != std::string::npos);

  std::string pip = wb::without_credential_lines(
      "[global]\nindex-url = https://me:SECRET7@pypi.corp.example/simple\nextra-index-url = https://pypi.org/simple\n",
      "pip.conf");
  CHECK(pip.find("SECRET7") == std::string::npos);
  CHECK(pip.find("index-url = https://pypi.corp.example/simple\n") != std::string::npos);
  CHECK(pip.find("extra-index-url = https://pypi.org/simple\n") != std::string::npos);
  // Quoted keys, block and folded values, flow mappings: taken out, or the whole file withheld.
  std::string q =
      wb::without_credential_lines("\"//registry.npmjs.org/:_authToken\" = QUOTEDNPM\nregistry=https://r/\n", ".npmrc");
  CHECK(q.find("QUOTEDNPM") == std::string::npos);
  CHECK(q.find("registry=https://r/") != std::string::npos);
  std::string b = wb::without_credential_lines(
      "npmRegistries:\n  \"//registry.npmjs.org\":\n    npmAuthToken: >-\n      BLOCKYARN\n      MORE\nyarnPath: "
      "y.js\n",
      ".yarnrc.yml");
  CHECK(b.find("BLOCKYARN") == std::string::npos);
  CHECK(b.find("MORE") == std::string::npos);
  CHECK(b.find("yarnPath: y.js") != std::string::npos);
  CHECK(wb::without_credential_lines("\"npmAuthIdent\": \"u:QUOTEDYARN\"\n", ".yarnrc.yml").find("QUOTEDYARN") ==
        std::string::npos);
  std::string f =
      wb::without_credential_lines("npmScopes: {corp: {npmAuthToken: FLOWYARN}}\nyarnPath: y.js\n", ".yarnrc.yml");
  CHECK(f.find("FLOWYARN") == std::string::npos);
  CHECK(f.find("yarnPath") == std::string::npos);  // withheld whole
  CHECK(wb::without_credential_lines("x = a\n  _authToken\n", ".npmrc").find("_authToken") == std::string::npos);
  // Nothing to take out: the same text (then no copy is made).
  CHECK(wb::without_credential_lines("registry=https://r.example/\n", ".npmrc") == "registry=https://r.example/\n");
}

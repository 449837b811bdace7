// core/secrets: the variables kept out of the sandbox by default, by name or by value.
#include "core/secrets.hpp"

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

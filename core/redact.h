// Secrets kept out of everything kevo stores, prints or sends: the values of
// the variables that hold API keys (those an LLM config's api_key_env names,
// and any variable named like a key or a token). A second layer behind the
// runners' clean environment: whatever wrote a secret into a candidate's
// output, a compiler log or a model's reply, kevo keeps "[redacted]" instead.
#pragma once

#include <string>
#include <string_view>

namespace kevo {

// Adds `value` to the secrets (values shorter than 8 characters are too
// likely to be ordinary text, and are ignored). Safe from any thread.
void add_secret(std::string_view value);
// Adds the value of the environment variable `name`, when it is set.
void add_secret_from_env(std::string_view name);
// Adds the values of kevo's environment variables whose names say they hold
// a secret: ending in _KEY, _TOKEN, _SECRET or _PASSWORD (API_KEY, HF_TOKEN, ...).
void add_secrets_from_environment();

// `text` with every known secret replaced by "[redacted]".
std::string redact_secrets(std::string_view text);

}  // namespace kevo

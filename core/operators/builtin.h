// The operators shipped with kevo.
#pragma once

namespace kevo {
class OperatorRegistry;
void register_builtin_operators(OperatorRegistry& registry);
}  // namespace kevo

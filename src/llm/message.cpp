#include "kagent/llm/message.hpp"

namespace kagent::llm {

std::string_view role_name(Role r) {
  switch (r) {
    case Role::system:
      return "system";
    case Role::user:
      return "user";
    case Role::assistant:
      return "assistant";
    case Role::tool:
      return "tool";
  }
  return "user";
}

}  // namespace kagent::llm

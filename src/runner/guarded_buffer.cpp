#include "guarded_buffer.hpp"

namespace kagent::runner {

GuardedBuffer::GuardedBuffer(size_t bytes, std::string kind, std::string name)
    : layout_(guard_layout(bytes)), mem_(layout_.total()), kind_(std::move(kind)), name_(std::move(name)) {}

}  // namespace kagent::runner

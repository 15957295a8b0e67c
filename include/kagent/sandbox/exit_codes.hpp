#pragma once
// The exit codes of a child that never reached its program, shared by every way kagent starts one
// (sandbox::spawn, sandbox::spawn_jailed and the jail's init, kagent-jail-init). Each comes with
// one line on the child's stderr naming the step, the path and the errno.
namespace kagent::sandbox {

inline constexpr int kSetupFailedExit = 126;  // a sandbox step (namespace, mount, limit) failed
inline constexpr int kExecFailedExit = 127;   // the program itself could not be executed

}  // namespace kagent::sandbox

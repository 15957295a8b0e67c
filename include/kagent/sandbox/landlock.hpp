#pragma once
// Write confinement with Landlock (Linux 5.13+), for children that run on the host's file system
// (the ModelNew worker, through kagent-sandbox-exec): the calling process and everything it
// executes may create, write, truncate, remove or rename files only beneath the given
// directories. Reading and executing stay allowed everywhere, because only the write-side access
// rights are handled; an unhandled right is never restricted by Landlock.
#include <string>
#include <vector>

namespace kagent::sandbox {

struct LandlockResult {
  bool enforced = false;  // the rules hold for this process from now on
  int abi = 0;            // the kernel's Landlock ABI version, 0 when it has none
  std::string warning;    // set when not enforced: one line saying why
};

// The write-side access rights the kernel's Landlock ABI `abi` knows (ABI 1: write, remove and
// make-*; 2 adds REFER, 3 TRUNCATE); 0 for an ABI below 1.
unsigned long long landlock_write_rights(int abi);

// The kernel's Landlock ABI version, or 0 with errno set when it has none (ENOSYS: not built in,
// EOPNOTSUPP: disabled at boot).
int landlock_abi();

// Sets PR_SET_NO_NEW_PRIVS and confines writes to `writable` (directories, all of which must
// exist). A kernel without Landlock gives enforced=false and the warning "no Landlock on this
// kernel (...): writes are not confined", and changes nothing. A path that cannot be
// opened throws InputError naming it, before anything is restricted: a missing directory must not
// quietly become a sandbox in which nothing is writable, nor one that is not enforced. Any other
// failure of the Landlock calls throws EnvError. Call it single-threaded (Landlock binds the
// calling thread and what it later starts), just before exec.
LandlockResult restrict_writes(const std::vector<std::string>& writable);

}  // namespace kagent::sandbox

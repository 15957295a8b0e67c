// A concern other than sandbox/ that starts a process itself: the layering check refuses it.
#include <unistd.h>

int start_child() {
  return fork();
}

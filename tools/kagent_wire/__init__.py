"""What kagent's Python children (kagent_ref, the reference server; kagent_modelnew, the ModelNew
worker) share with each other and with kagent-runner:

- jsonlines: the framing (one request per line on stdin, one reply per line on a private copy of
  stdout) and the serve loop;
- ipc: CUDA IPC of tensors between the children and the runner, and kagent's dtype names;
- stats: the timing statistics and stopping rule, the twin of src/protocol/stats.cpp.

Standard library only, except ipc (torch and libcuda.so.1). Everything a child imports from here is
a public name; nothing reaches into another package's underscore names."""

/*kagent
{
  "launch": [
    {"kernel": "vector_add_racy", "grid": ["cdiv(numel(out),256)"], "block": [256],
     "args": ["a", "b", "out", "i64:numel(out)", "i32:4"]}
  ]
}
*/
// Fixture (examples/vector_add/op.json): a kernel that is right only sometimes, as a race makes
// a kernel. Every block computes its own 256 elements of out = a + b correctly. In addition,
// thread 0 of block 0 reads the GPU's global nanosecond timer (%globaltimer) when it starts and,
// when (timer / 1024) % period == 0 (period is the last argument, 4 in the plan, so roughly one
// run in four), waits about 20 microseconds and then stores a stale, incomplete value (a[j]
// without b[j]) into the first element j = blockDim.x of block 1's region, with no
// synchronization between the blocks. If block 1 has already written out[j] (almost always,
// after the wait) the stale value wins and the output is wrong at exactly one index; if block 1
// writes after it, the output is right.
//
// Why this construction: a "natural" inter-block race (blocks reading each other's results) on a
// 65536-block grid is either nearly always wrong (many racing pairs per run) or nearly never wrong
// (the window is tiny), depending on the GPU's scheduling, which cannot be tuned without the GPU.
// Gating a single racy write on the run's start time gives a failure rate that does not depend
// on the GPU model: about 1/period of runs, independent from run to run (the timer's microsecond
// bits at kernel start are effectively random across runs). With period 4, five correctness
// trials all pass with probability (3/4)^5 = 24 %, so the first trial is not deterministically
// wrong and the checks during and after timing must catch the rest. For a rarer fault, change
// "i32:4" to a larger period in a copy of this file; period 1 makes it wrong (almost) every run.

extern "C" __global__ void vector_add_racy(const float* a, const float* b, float* out, long long n,
                                           int period) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
  if (i == 0 && period > 0) {
    unsigned long long start;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    if ((start >> 10) % (unsigned long long)period == 0) {
      // Give block 1 time to write its region first (it runs concurrently on another SM).
      unsigned long long now = start;
      while (now - start < 20000ull) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
      const long long j = blockDim.x;
      if (j < n) out[j] = a[j];  // stale: the sum without b[j]
    }
  }
}

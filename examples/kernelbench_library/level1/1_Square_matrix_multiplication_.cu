/*kagent
{"launch": [{"gemm": {"a": "A", "b": "B", "d": "out", "m": "A.shape[0]", "n": "B.shape[1]", "k": "A.shape[1]"}}]}
*/
// KernelBench level1/1_Square_matrix_multiplication_: out = A @ B as one cuBLASLt step and nothing
// else (IEEE fp32: compute "auto"). An overhead fixture (issue #19): eager PyTorch runs the same
// product through cuBLAS, so the speedup kagent prints is the cost of a library step against
// calling the library from PyTorch, expected within 3% of 1.

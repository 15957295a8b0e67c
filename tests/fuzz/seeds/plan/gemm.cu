/*kagent
{"launch": [{"gemm": {"a": "x", "b": "x", "d": "out", "m": 64, "n": 1024, "k": 64, "lda": 1024, "batch": 1,
                      "alpha": 1.5, "activation": "relu", "compute": "auto"}}]}
*/

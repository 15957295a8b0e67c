/*kagent
{"scratch": {"h": {"dtype": "f32", "shape": [64, 128]}},
 "launch": [{"gemm": {"a": "x", "b": "x", "trans_b": true, "ldb": 1024, "offset_b": 512, "d": "h", "ldd": 128,
                      "offset_d": 64, "m": 64, "n": 64, "k": 512}},
            {"gemm": {"a": "x", "lda": "x.shape[1]", "offset_a": "x.shape[1] / 2", "b": "x", "trans_b": true,
                      "ldb": 1024, "c": "h", "ldc": 128, "offset_c": 64, "beta": 1, "d": "h", "ldd": 128,
                      "offset_d": 64, "m": 64, "n": 64, "k": 512}}]}
*/

// A gemm step asked to write an operator input: refused before anything runs.
/*kagent
{"launch": [{"gemm": {"a": "out", "b": "weight", "d": "x", "m": 96, "n": 200, "k": 130}}]}
*/

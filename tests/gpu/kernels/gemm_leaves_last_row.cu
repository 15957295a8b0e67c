// A gemm step that computes only the first 95 of the output's 96 rows: the last row keeps the
// harness's poison, so the candidate is incorrect (library steps get no pass on poisoned outputs).
/*kagent
{"launch": [{"gemm": {"a": "x", "b": "weight", "trans_b": true, "d": "out", "bias": "bias", "activation": "relu",
                      "m": 95, "n": "weight.shape[0]", "k": "x.shape[1]"}}]}
*/

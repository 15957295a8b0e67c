/*kagent
{"scratch": {"t": {"dtype": "f32", "shape": [2, 4, 8]}, "w": {"dtype": "f32", "shape": [4, 2, 3]},
             "y": {"dtype": "f32", "shape": [2, 4, 6]}},
 "graph": true,
 "launch": [{"conv": {"x": "t", "w": "w", "y": "y", "stride": [1], "padding": 0, "dilation": 1, "groups": 2,
                      "transposed": false, "activation": "none"}}]}
*/

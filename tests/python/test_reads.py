"""Which tensors a reference's forward reads (tools/kagent_ref/reads.py): a tensor is unread when no
operator was given its storage, never when it has no elements, and nothing is claimed when the
dispatch mode could not follow the forward call. torch is not needed for this part."""

import unittest

from kagent_ref import reads


class Storage:
    def __init__(self, ptr):
        self.ptr = ptr

    def data_ptr(self):
        return self.ptr


class Tensor:
    def __init__(self, ptr, numel=4):
        self.ptr, self.n = ptr, numel

    def numel(self):
        return self.n

    def untyped_storage(self):
        return Storage(self.ptr)


class Unread(unittest.TestCase):
    def test_only_storages_no_operator_was_given(self):
        named = [("x", Tensor(1)), ("w", Tensor(2)), ("c_proj_weight", Tensor(3)), ("view_of_w", Tensor(2))]
        self.assertEqual(reads.unread(named, {1, 2}), {"c_proj_weight"})

    def test_an_empty_tensor_is_never_unread(self):
        self.assertEqual(reads.unread([("e", Tensor(0, numel=0))], set()), set())

    def test_no_claim_when_the_forward_could_not_be_followed(self):
        self.assertEqual(reads.unread([("x", Tensor(1))], None), set())


if __name__ == "__main__":
    unittest.main()

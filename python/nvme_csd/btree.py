# SPDX-License-Identifier: MIT
"""The B+-tree of the chase example (spec/csd_btree.h) on the namespace: written by
libcsd (csd::btree_write), looked up in the drive by one chase of btree_lookup.o per key,
with no host round trip per level (XRP-style)."""

from . import _core
from .errors import CsdError

RECORD_SIZE = 512      # btree_lookup.o is loaded for 512-byte records (a node: 504 bytes)
_FOUND = 1 << 62       # the lookup's answer: found, value in the low 61 bits
_BAD_NODE = 1 << 61    # a block that is no node of the format
_VALUE_MASK = (1 << 61) - 1


class BTree:
    """A tree whose root is at root_lba; lookups run the program (a Program of
    btree_lookup.o, loaded with record size 512)."""

    def __init__(self, program, root_lba, depth):
        self.program, self.root_lba, self.depth = program, int(root_lba), int(depth)

    @classmethod
    def build(cls, dev, pairs, lba, program, fanout=31, force=False):
        """Writes a tree of pairs (a dict, or (key, value) pairs; keys and values unsigned,
        values below 2^61) from LBA lba (the root; the levels below follow it). Unless
        force, refuses (CsdError, errno EEXIST, nothing written) a namespace holding a
        partition table, a filesystem or volume signature or an object store, and blocks
        that hold anything but zeros or an earlier tree's nodes."""
        items = sorted(dict(pairs).items())
        keys = [int(k) for k, _ in items]
        values = [int(v) for _, v in items]
        root, blocks, depth = _core.programs.btree_write(dev._dev, keys, values, int(lba), int(fanout), bool(force))
        tree = cls(program, root, depth)
        tree.blocks = blocks
        return tree

    def lookup(self, key):
        """The value of key, or None; one Execute whatever the depth, and no other command."""
        return self._value(key, self.program.chase_value(self.root_lba, [int(key)], max(self.depth, 1)))

    def lookup_hops(self, key):
        """(value or None, blocks the drive read)."""
        v, hops = self.program.chase(self.root_lba, [int(key)], max(self.depth, 1))
        return self._value(key, v), hops

    @staticmethod
    def _value(key, v):
        """The value a chase of btree_lookup answered, None for an absent key."""
        if v & _BAD_NODE:
            raise CsdError(f"B+-tree lookup of {key}: a block that is no node")
        return v & _VALUE_MASK if v & _FOUND else None

    def get(self, key, default=None):
        value = self.lookup(key)
        return default if value is None else value

    def __getitem__(self, key):
        value = self.lookup(key)
        if value is None:
            raise KeyError(key)
        return value

    def __contains__(self, key):
        return self.lookup(key) is not None

# SPDX-License-Identifier: MIT
"""Functions DataLoader workers run in test_data.py, in a module of their own so that a
spawned worker imports torch and nvme_csd but not the test module and pytest."""
import os

import torch


def worker_report(x):
    """The item with where it was read: (item, worker pid, whether CUDA was initialised there)."""
    return x, os.getpid(), torch.cuda.is_initialized()


def collate_reports(items):
    """Collates (item, pid, cuda) triples into (stacked items, set of pids, any CUDA)."""
    return torch.stack([x for x, _, _ in items]), {p for _, p, _ in items}, any(c for _, _, c in items)

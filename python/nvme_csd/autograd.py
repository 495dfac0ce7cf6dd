# SPDX-License-Identifier: MIT
"""PyTorch integration: matrix products that run in the drive, with autograd.

    layer = nvme_csd.autograd.CsdLinear(dev, 1024, 256)
    y = layer(x)          # forward: x @ W^T + b in the drive
    y.sum().backward()    # backward: both gradients are gemms in the drive too
"""

import numpy as np
import torch

from .device import Device


class CsdMatmul(torch.autograd.Function):
    """a @ b (float32, 2-D, CPU tensors) computed by the device's gemm program; backward
    computes grad @ b^T and a^T @ grad with the same program (transposes done in-drive)."""

    @staticmethod
    def forward(ctx, dev: Device, a, b):
        ctx.dev = dev
        ctx.save_for_backward(a, b)
        return torch.from_numpy(dev.gemm(a.detach().contiguous().numpy(), b.detach().contiguous().numpy()))

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        dev = ctx.dev
        g = grad.detach().contiguous().numpy()
        ga = gb = None
        if ctx.needs_input_grad[1]:
            ga = torch.from_numpy(dev.gemm(g, b.detach().contiguous().numpy(), trans_b=True))
        if ctx.needs_input_grad[2]:
            gb = torch.from_numpy(dev.gemm(a.detach().contiguous().numpy(), g, trans_a=True))
        return None, ga, gb


def matmul(dev, a, b):
    """a @ b in the drive, differentiable."""
    return CsdMatmul.apply(dev, a, b)


class CsdLinear(torch.nn.Module):
    """nn.Linear whose matrix products (forward and backward) run in the drive."""

    def __init__(self, dev, in_features, out_features, bias=True):
        super().__init__()
        self.dev = dev
        ref = torch.nn.Linear(in_features, out_features, bias=bias)  # same initialisation
        self.weight = torch.nn.Parameter(ref.weight.detach().clone())
        self.bias = torch.nn.Parameter(ref.bias.detach().clone()) if bias else None

    def forward(self, x):
        shape = x.shape
        y = matmul(self.dev, x.reshape(-1, shape[-1]), self.weight.t().contiguous())
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*shape[:-1], self.weight.shape[0])


def load_tensor(dev, name):
    """A stored tensor as a torch CPU tensor (no copy beyond the read)."""
    a = dev.store[name]
    if not isinstance(a, np.ndarray):
        raise TypeError(f"object {name!r} is a blob, not a tensor")
    return torch.from_numpy(a)

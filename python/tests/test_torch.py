# SPDX-License-Identifier: MIT
"""PyTorch integration: DLPack/torch inputs, autograd through the drive, CsdLinear."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
from nvme_csd.autograd import CsdLinear, load_tensor, matmul  # noqa: E402


def test_torch_tensors_in_and_out(dev):
    a = torch.randn(16, 32)
    b = torch.randn(32, 8)
    c = dev.gemm(a, b)
    assert isinstance(c, torch.Tensor)
    assert torch.allclose(c, a @ b, atol=1e-4)
    assert torch.allclose(dev.softmax(a), torch.softmax(a, dim=1), atol=1e-6)


def test_dlpack_input(dev):
    a = torch.randn(8, 8)
    cap = a.__dlpack__()
    assert cap is not None
    x = dev.gemm(np.from_dlpack(a), np.eye(8, dtype=np.float32))
    assert np.allclose(x, a.numpy())


def test_matmul_gradients_match_pytorch(dev):
    a = torch.randn(12, 20, requires_grad=True)
    b = torch.randn(20, 7, requires_grad=True)
    y = matmul(dev, a, b)
    (y * y).sum().backward()
    a2, b2 = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    y2 = a2 @ b2
    (y2 * y2).sum().backward()
    assert torch.allclose(y, y2, atol=1e-4)
    assert torch.allclose(a.grad, a2.grad, atol=1e-3)
    assert torch.allclose(b.grad, b2.grad, atol=1e-3)


def test_linear_layer_trains_like_nn_linear(dev):
    torch.manual_seed(0)
    layer = CsdLinear(dev, 10, 4)
    ref = torch.nn.Linear(10, 4)
    with torch.no_grad():
        ref.weight.copy_(layer.weight)
        ref.bias.copy_(layer.bias)
    x = torch.randn(32, 10)
    for mod in (layer, ref):
        loss = mod(x).pow(2).mean()
        loss.backward()
    assert torch.allclose(layer(x), ref(x), atol=1e-5)
    assert torch.allclose(layer.weight.grad, ref.weight.grad, atol=1e-5)
    assert torch.allclose(layer.bias.grad, ref.bias.grad, atol=1e-5)


def test_stored_tensor_as_torch(dev):
    dev.store["t"] = torch.arange(10, dtype=torch.float32)
    t = load_tensor(dev, "t")
    assert isinstance(t, torch.Tensor) and t.tolist() == list(range(10))


def test_cuda_tensor_is_refused_clearly(dev):
    if not torch.cuda.is_available():
        pytest.skip("no GPU here")
    with pytest.raises(Exception, match="CPU tensor"):
        dev.gemm(torch.ones(2, 2, device="cuda"), torch.ones(2, 2, device="cuda"))

"""The step chapter 4 shows (:func:`ftcl_core.methods.moco.moco_ft_step`, the paper's path in ~20 lines) is the step
the library trains with: :class:`~ftcl_core.methods.MoCo` under :func:`ftcl_core.training.train_step`, FT on the
pair and the queue, from the same seed.  Same loss, gradients, weights (query and key encoders, BN statistics) and
queue, step after step, so the shown code cannot drift from the code that runs."""

from __future__ import annotations

import copy

import pytest
import torch

from ftcl_core.config import load_config
from ftcl_core.methods import StepContext, build_model
from ftcl_core.methods.moco import moco_ft_step
from ftcl_core.training import build_optimizer, train_step

ATOL = 1e-6


def _state(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _grads(model) -> dict[str, torch.Tensor]:
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def _close(a: dict, b: dict) -> list[str]:
    assert a.keys() == b.keys()
    return [k for k in a if not torch.allclose(a[k].float(), b[k].float(), atol=ATOL, rtol=1e-5)]


@pytest.mark.parametrize("seed, alpha_ex, alpha_in", [(0, 2.0, 1.6), (3, 0.4, 0.6)])
def test_the_shown_step_is_the_librarys_step(seed, alpha_ex, alpha_in):
    cfg = load_config("configs/smoke_moco_v2.yaml", [f"seed={seed}", "ft.pos=true", "ft.neg=true",
                                                     f"ft.alpha_ex={alpha_ex}", f"ft.alpha_in={alpha_in}"])
    library = build_model(cfg)
    shown = copy.deepcopy(library)
    opt_lib, opt_shown = build_optimizer(cfg, library, "cpu"), build_optimizer(cfg, shown, "cpu")
    gen_lib, gen_shown = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
    ctx = StepContext(gen_lib, ft=cfg.ft)
    images = torch.Generator().manual_seed(100 + seed)
    batch, size = cfg.train.batch_size, cfg.augment.out_size
    for step in range(5):  # the queue (256) wraps after four batches of 64
        x_q, x_k = (torch.randn(batch, 3, size, size, generator=images) for _ in range(2))
        out = train_step(library, opt_lib, (x_q, x_k), ctx)
        loss = moco_ft_step(shown, opt_shown, x_q, x_k, gen_shown, alpha_ex, alpha_in)
        assert torch.allclose(out.loss, loss, atol=ATOL), (step, float(out.loss), float(loss))
        assert not _close(_grads(library), _grads(shown)), step
        assert not _close(_state(library), _state(shown)), step  # encoders, BN statistics, queue and its pointer
    assert not torch.equal(library.queue[:batch], build_model(cfg).queue[:batch])  # the queue did fill


def test_the_shown_step_differs_from_a_step_without_ft():
    """The comparison above can tell FT from no FT: the library's plain MoCo step gives another loss."""
    cfg = load_config("configs/smoke_moco_v2.yaml")
    library = build_model(cfg)
    shown = copy.deepcopy(library)
    x_q, x_k = (torch.randn(64, 3, 16, 16, generator=torch.Generator().manual_seed(i)) for i in range(2))
    out = train_step(library, build_optimizer(cfg, library, "cpu"), (x_q, x_k),
                     StepContext(torch.Generator().manual_seed(0), ft=cfg.ft))
    loss = moco_ft_step(shown, build_optimizer(cfg, shown, "cpu"), x_q, x_k, torch.Generator().manual_seed(0))
    assert not torch.allclose(out.loss, loss, atol=1e-3)

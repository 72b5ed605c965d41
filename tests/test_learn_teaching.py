"""The teaching code the Learn chapters build from scratch (their cells tagged ``teaching``) is the library's: the
first chapter's InfoNCE equals :func:`ftcl_core.losses.info_nce` on the toy's logits, and the second chapter's
``MyMoCo`` with ``my_moco_step`` takes the same steps as :class:`ftcl_core.methods.MoCo` under
:func:`ftcl_core.training.train_step` (loss, weights, BN statistics, queue), from the same start and draws; the
fourth chapter's transformations are :func:`ftcl_core.transforms.extrapolate_positive` and
:func:`ftcl_core.transforms.interpolate_negatives`; the fifth chapter's ``my_ft_step`` (the six lines in that step)
takes the library's steps with FT on."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from ftcl_core.config import load_config
from ftcl_core.losses import info_nce
from ftcl_core.methods import StepContext, build_model
from ftcl_core.study.toy import in_batch_logits
from ftcl_core.training import build_optimizer, train_step

SRC = Path(__file__).resolve().parent.parent / "book" / "src"


def teaching(chapter: str) -> dict:
    """The names the chapter's ``teaching`` cells define, executed as the notebook does."""
    text = (SRC / chapter).read_text()
    cells = re.split(r"^# %%", text, flags=re.M)
    code = [c.split("\n", 1)[1] for c in cells if c.split("\n", 1)[0].strip().startswith('tags=') and '"teaching"' in
            c.split("\n", 1)[0]]
    assert code, f"{chapter} has no cell tagged teaching"
    namespace: dict = {}
    prelude = ("import copy\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
               "from ftcl_core.losses import info_nce\nfrom ftcl_core.study.toy import in_batch_logits\n"
               "from ftcl_core import ft, transforms\n")  # chapters' imports
    exec(compile(prelude + "\n".join(code), chapter, "exec"), namespace)
    return namespace


@pytest.mark.parametrize("n, tau, seed", [(8, 0.2, 0), (33, 0.07, 1), (2, 1.0, 2)])
def test_the_taught_info_nce_is_the_librarys(n, tau, seed):
    my_info_nce = teaching("learn1_contrastive.py")["my_info_nce"]
    g = torch.Generator().manual_seed(seed)
    q, k = (F.normalize(torch.randn(n, 5, generator=g), dim=1) for _ in range(2))
    assert torch.allclose(my_info_nce(q, k, tau), info_nce(in_batch_logits(q, k, tau)), atol=1e-6)


@pytest.mark.parametrize("n, seed", [(8, 0), (33, 1), (2, 2)])
def test_the_taught_alignment_and_uniformity_are_the_librarys(n, seed):
    from ftcl_core.stats import representation_statistics

    ns = teaching("learn1_contrastive.py")
    g = torch.Generator().manual_seed(seed)
    q, k = (F.normalize(torch.randn(n, 5, generator=g), dim=1) for _ in range(2))
    align, uniform = representation_statistics(q, k)[:2]
    assert torch.allclose(ns["my_alignment"](q, k), align, atol=1e-5)
    assert torch.allclose(ns["my_uniformity"](q), uniform, atol=1e-5)


def _state(module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


@pytest.mark.parametrize("seed, momentum", [(0, 0.99), (3, 0.9)])
def test_the_moco_built_from_scratch_takes_the_librarys_steps(seed, momentum):
    ns = teaching("learn2_moco.py")
    cfg = load_config("configs/smoke_moco_v2.yaml", [f"seed={seed}", f"moco.momentum={momentum}"])
    library = build_model(cfg)
    mine = ns["MyMoCo"](copy.deepcopy(library.encoder_q), cfg.model.dim, cfg.moco.queue_size, cfg.moco.momentum,
                        cfg.moco.tau, seed=cfg.seed)
    assert torch.equal(mine.queue, library.queue)  # the same random start
    opt_lib = build_optimizer(cfg, library, "cpu")
    o = cfg.optim
    opt_mine = torch.optim.SGD(mine.encoder_q.parameters(), lr=o.lr, momentum=o.momentum, weight_decay=o.weight_decay)
    gen_lib, gen_mine, images = (torch.Generator().manual_seed(s) for s in (seed, seed, 100 + seed))
    ctx = StepContext(gen_lib)
    batch, size = cfg.train.batch_size, cfg.augment.out_size
    for step in range(6):  # the queue (256) wraps after four batches of 64
        x_q, x_k = (torch.randn(batch, 3, size, size, generator=images) for _ in range(2))
        lib_loss = train_step(library, opt_lib, (x_q, x_k), ctx).loss
        my_loss = ns["my_moco_step"](mine, opt_mine, x_q, x_k, gen_mine)
        assert torch.allclose(lib_loss, my_loss, atol=1e-6), (step, float(lib_loss), float(my_loss))
        for name, a, b in ((n, _state(mine.encoder_q)[n], v) for n, v in _state(library.encoder_q).items()):
            assert torch.allclose(a.float(), b.float(), atol=1e-6), (step, "encoder_q", name)
        for name, a, b in ((n, _state(mine.encoder_k)[n], v) for n, v in _state(library.encoder_k).items()):
            assert torch.allclose(a.float(), b.float(), atol=1e-6), (step, "encoder_k", name)
        assert torch.allclose(mine.queue, library.queue, atol=1e-6) and int(mine.ptr) == int(library.queue_ptr), step


def test_the_comparison_can_fail():
    """A from-scratch step that forgets the momentum update drifts from the library's at once."""
    ns = teaching("learn2_moco.py")
    cfg = load_config("configs/smoke_moco_v2.yaml")
    library = build_model(cfg)
    mine = ns["MyMoCo"](copy.deepcopy(library.encoder_q), cfg.model.dim, cfg.moco.queue_size, cfg.moco.momentum,
                        cfg.moco.tau, seed=cfg.seed)
    mine.momentum_update = lambda: None  # the bug
    opt_lib, opt_mine = build_optimizer(cfg, library, "cpu"), torch.optim.SGD(mine.encoder_q.parameters(), lr=cfg.optim.lr,
                                                                            momentum=cfg.optim.momentum,
                                                                            weight_decay=cfg.optim.weight_decay)
    gen_lib, gen_mine, images = (torch.Generator().manual_seed(s) for s in (0, 0, 100))
    ctx = StepContext(gen_lib)
    differs = False
    for _ in range(3):
        x_q, x_k = (torch.randn(cfg.train.batch_size, 3, cfg.augment.out_size, cfg.augment.out_size, generator=images)
                    for _ in range(2))
        lib_loss = train_step(library, opt_lib, (x_q, x_k), ctx).loss
        differs |= not torch.allclose(lib_loss, ns["my_moco_step"](mine, opt_mine, x_q, x_k, gen_mine), atol=1e-6)
    assert differs


@pytest.mark.parametrize("seed, granularity", [(0, "step"), (1, "sample"), (2, "dim")])
def test_the_taught_transformations_are_the_librarys(seed, granularity):
    from ftcl_core import transforms

    ns = teaching("learn5_ft.py")
    g = torch.Generator().manual_seed(seed)
    z_q, z_k = transforms.unit_pairs(16, 32, g)
    lam = transforms.sample_lambda(2.0, granularity, 16, 32, g, shift=1.0).double()
    for mine, library in zip(ns["my_extrapolate"](z_q, z_k, lam), transforms.extrapolate_positive(z_q, z_k, lam)):
        assert torch.allclose(mine, library)
    queue = F.normalize(torch.randn(64, 32, generator=g, dtype=torch.float64), dim=1)
    lam_in, partners = transforms.sample_lambda(1.6, granularity, 64, 32, g).double(), transforms.sample_permutation(64, g)
    assert torch.allclose(
        ns["my_interpolate"](queue, lam_in, partners), transforms.interpolate_negatives(queue, lam_in, partners)
    )


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("tau", [0.05, 0.2, 1.0])
def test_the_push_curve_ranks_the_negatives_and_holds_the_hardest_share(seed, tau):
    """Learn 1's temperature explorer: the share of the push rises to 1 and never falls, lies on or above the
    diagonal (the hardest come first), and at a tenth of the negatives is hardest_share's number."""
    import numpy as np

    from ftcl_core.study.toy import hardest_share, push_curve

    f = F.normalize(torch.randn(50, 2, generator=torch.Generator().manual_seed(seed)), dim=1).numpy()
    x, share = push_curve(f, tau)
    assert len(x) == len(share) == 49 and x[-1] == 1.0
    assert np.isclose(share[-1], 1.0) and np.all(np.diff(share) >= -1e-12) and np.all(share >= x - 1e-12)
    k = max(1, round(0.1 * 49))
    assert np.isclose(share[k - 1], hardest_share(f, tau))


def test_a_colder_temperature_pushes_the_hardest_negatives_harder():
    import numpy as np

    from ftcl_core.study.toy import push_curve

    f = F.normalize(torch.randn(80, 2, generator=torch.Generator().manual_seed(0)), dim=1).numpy()
    (_, cold), (_, warm) = push_curve(f, 0.05), push_curve(f, 1.0)
    assert np.all(cold >= warm - 1e-12) and cold[7] > warm[7] + 0.2
    with pytest.raises(ValueError, match="at least 2"):
        push_curve(f[:1], 0.2)


def test_the_push_curve_check_holds_on_ordered_shares_and_fails_otherwise():
    from ftcl_core.study import learn
    from ftcl_core.study.checks import failures

    name = "the colder the temperature, the higher the push curve starts"
    ordered = {"hardest_shares_value": [0.9, 0.6, 0.3], "hardest_shares": "..."}
    assert failures(learn.CHECKS, ordered, name) == {}
    assert name in failures(learn.CHECKS, {**ordered, "hardest_shares_value": [0.9, 0.3, 0.6]}, name)


def test_the_false_negative_check_needs_most_of_the_cold_push_on_a_sixth_of_the_negatives():
    from ftcl_core.study import learn
    from ftcl_core.study.checks import failures
    from ftcl_core.study.toy import own_cluster_push

    name = "at the coldest temperature most of the push falls on the query's own cluster, a sixth of its negatives"
    held = {"coldest": "0.05", "warmest": "1", "own_push_0.05_value": 0.89, "own_push_0.05": "89 %",
            "own_push_1_value": 0.36, "own_push_1": "36 %", "own_count_value": 0.167, "own_count": "17 %"}
    assert failures(learn.CHECKS, held, name) == {}
    for flip in ({"own_push_0.05_value": 0.4}, {"own_count_value": 0.5}, {"own_push_1_value": 0.95}):
        assert name in failures(learn.CHECKS, {**held, **flip}, name), flip
    # the measure: two clusters of two points, at a cold temperature the push goes to the same-cluster point
    feats = torch.tensor([[1.0, 0.0], [0.99, 0.141], [-1.0, 0.0], [-0.99, -0.141]])
    push, count = own_cluster_push(feats.numpy(), torch.tensor([0, 0, 1, 1]).numpy(), tau=0.05)
    assert abs(count - 1 / 3) < 1e-9 and push > 0.99


def test_the_brief_moco_readout_check_needs_a_real_gain():
    from ftcl_core.study import learn
    from ftcl_core.study.checks import failures

    name = "a minute of MoCo already reads better than its start"
    assert failures(learn.MOCO_TRAINING_CHECKS, {"before": 19.2, "after": 40.2, "chance": 10.0}, name) == {}
    assert name in failures(learn.MOCO_TRAINING_CHECKS, {"before": 19.2, "after": 21.0, "chance": 10.0}, name)


@pytest.mark.parametrize("pos, neg", [(True, True), (False, True), (True, False)])
def test_the_step_with_the_six_lines_takes_the_librarys_steps_with_ft(pos, neg):
    from ftcl_core.ft import FTConfig

    my_ft_step = teaching("learn6_your_moco.py")["my_ft_step"]
    cfg = load_config("configs/smoke_moco_v2.yaml")
    library = build_model(cfg)
    mine = copy.deepcopy(library)
    opt_lib, opt_mine = build_optimizer(cfg, library, "cpu"), build_optimizer(cfg, mine, "cpu")
    ft_cfg = FTConfig(pos=pos, neg=neg)
    gen_lib, gen_mine, images = (torch.Generator().manual_seed(s) for s in (5, 5, 6))
    ctx = StepContext(gen_lib, ft=ft_cfg)
    size = cfg.augment.out_size
    for step in range(6):  # past the queue's wrap (256 keys, batches of 64)
        x_q, x_k = (torch.randn(cfg.train.batch_size, 3, size, size, generator=images) for _ in range(2))
        lib_loss = train_step(library, opt_lib, (x_q, x_k), ctx).loss
        my_loss = my_ft_step(mine, opt_mine, x_q, x_k, gen_mine, ft_cfg)
        assert torch.allclose(lib_loss, my_loss, atol=1e-6), (step, float(lib_loss), float(my_loss))
        for (name, a), b in zip(_state(mine).items(), _state(library).values()):
            assert torch.allclose(a.float(), b.float(), atol=1e-6), (step, name)

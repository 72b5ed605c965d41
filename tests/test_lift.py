"""Lifting FT into one's own MoCo (``ftcl_core.ft``): the README's six lines run as written, and the inputs a
lift gets wrong first (a dict for the config, builder.py's C x K queue, a square queue) are refused with the fix."""

import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from ftcl_core import ft
from ftcl_core.losses import check_moco_inputs

ROOT = Path(__file__).resolve().parent.parent


def readme_lift() -> str:
    """The fenced python block under the README's "Lift FT into your own MoCo"."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Lift FT into your own MoCo", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "the README's lift section holds one python block"
    return blocks[0]


def feats(n=4, c=8, k=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = F.normalize(torch.randn(n, c, generator=g), dim=1).requires_grad_(True)
    key = F.normalize(torch.randn(n, c, generator=g), dim=1)
    queue = F.normalize(torch.randn(k, c, generator=g), dim=1)  # K x C, one normalised key per row
    return q, key, queue


def plain_info_nce(q, k, queue_kc, tau):
    """MoCo's loss without FT, written out: positive in column 0, negatives against every stored key."""
    logits = torch.cat([(q * k).sum(1, keepdim=True), q @ queue_kc.T], 1) / tau
    return F.cross_entropy(logits, torch.zeros(q.shape[0], dtype=torch.long))


def run_lift(code: str, q, k, queue) -> dict:
    scope = {"q": q, "k": k, "queue": queue}
    exec(compile(code, "README.md (Lift FT into your own MoCo)", "exec"), scope)
    return scope


def test_the_readme_lift_runs_and_trains():
    code = readme_lift()
    assert len([line for line in code.splitlines() if line.strip()]) <= 6
    q, k, queue = feats()
    out = run_lift(code, q, k, queue)
    assert out["logits"].shape == (4, 1 + 16)
    loss = out["loss"]
    assert loss.dim() == 0 and torch.isfinite(loss)
    loss.backward()
    assert q.grad is not None and torch.isfinite(q.grad).all() and q.grad.abs().sum() > 0
    assert out["cfg"].pos and out["cfg"].neg  # FT really on: the loss differs from plain InfoNCE
    assert not torch.allclose(loss, plain_info_nce(q, k, queue, 0.2))


def test_the_readme_lift_with_ft_off_is_plain_info_nce():
    code = readme_lift()
    off = code.replace("ft.FTConfig(pos=True, neg=True)", "ft.FTConfig()")
    assert off != code
    q, k, queue = feats(seed=1)
    out = run_lift(off, q, k, queue)
    torch.testing.assert_close(out["loss"], plain_info_nce(q, k, queue, 0.2))


def test_the_module_docstring_shows_the_readmes_lines():
    doc_lines = {line.strip() for line in ft.__doc__.splitlines()}
    for line in readme_lift().splitlines():
        assert line.strip() in doc_lines, line


def test_builder_py_queue_is_refused_with_the_fix_and_its_transpose_gives_builder_py_logits():
    q, k, queue = feats(c=8, k=16)
    builder_queue = queue.T.contiguous()  # builder.py: C x K, normalised along dim 0
    gen = torch.Generator()
    with pytest.raises(ValueError, match=r"C x K = \(8, K=16\).*builder\.py.*K x C = \(16, 8\).*queue\.T"):
        ft.logits(q, k, builder_queue, ft.FTConfig(), gen, tau=0.2)
    got = ft.logits(q, k, builder_queue.T, ft.FTConfig(), gen, tau=0.2)
    l_pos = torch.einsum("nc,nc->n", q, k).unsqueeze(-1)  # builder.py's own lines
    l_neg = torch.einsum("nc,ck->nk", q, builder_queue)
    torch.testing.assert_close(got, torch.cat([l_pos, l_neg], dim=1) / 0.2)


def test_a_queue_of_another_width_names_the_expected_shape():
    q, k, _ = feats(c=8)
    with pytest.raises(ValueError, match=r"K x C = \(K, 8\)"):
        ft.logits(q, k, torch.randn(16, 5), ft.FTConfig(), torch.Generator(), tau=0.2)
    with pytest.raises(ValueError, match=r"N x C"):
        ft.logits(q, k[:, :4], torch.randn(16, 8), ft.FTConfig(), torch.Generator(), tau=0.2)


@pytest.mark.parametrize("bad", [{"pos": True, "neg": True}, None])
def test_a_dict_for_the_config_names_the_fix(bad):
    q, k, queue = feats()
    fix = r"FTConfig\(\*\*d\)" if isinstance(bad, dict) else r"FTConfig\(pos=\.\.\., neg=\.\.\.\)"
    with pytest.raises(TypeError, match=rf"ft must be an FTConfig.*got {type(bad).__name__}: build it with {fix}"):
        ft.logits(q, k, queue, bad, torch.Generator(), tau=0.2)
    with pytest.raises(TypeError, match="FTConfig"):  # and below the face, where the lift used to meet `.any`
        ft.moco_ft_logits(q, k, queue, bad, torch.Generator())


def test_ft_without_a_generator_names_the_fix():
    q, k, queue = feats()
    with pytest.raises(TypeError, match=r"torch\.Generator\(\)\.manual_seed"):
        ft.logits(q, k, queue, ft.FTConfig(pos=True), 0, tau=0.2)
    ft.logits(q, k, queue, ft.FTConfig(), None, tau=0.2)  # FT off draws nothing: no generator needed


def test_a_square_queue_is_read_by_its_data_both_ways():
    """K = C: rows of unit norm are MoCo's K x C queue (accepted, and the logits are the plain ones); builder.py's
    C x K has unit columns instead (refused, queue.T); a queue of neither asks for its layout to be stated."""
    q, k, queue = feats(c=16, k=16)
    cfg, gen = ft.FTConfig(), torch.Generator()
    torch.testing.assert_close(ft.info_nce(ft.logits(q, k, queue, cfg, gen, tau=0.2)), plain_info_nce(q, k, queue, 0.2))
    with pytest.raises(ValueError, match=r"builder\.py.*pass queue\.T.*K = C = 16: its columns are unit-norm keys"):
        ft.logits(q, k, queue.T.contiguous(), cfg, gen, tau=0.2)
    raw = torch.randn(16, 16, generator=torch.Generator().manual_seed(5))
    with pytest.raises(ValueError, match=r"cannot be told.*queue_layout='KC'"):
        ft.logits(q, k, raw, cfg, gen, tau=0.2)
    with pytest.raises(ValueError, match="queue must hold L2-normalised"):  # stated K x C, and still not keys
        ft.logits(q, k, raw, cfg, gen, tau=0.2, queue_layout="KC")
    keys = F.normalize(raw, dim=1)
    torch.testing.assert_close(ft.logits(q, k, keys, cfg, gen, tau=0.2, queue_layout="KC"),
                               torch.cat([(q * k).sum(1, keepdim=True), q @ keys.T], 1) / 0.2)
    with pytest.raises(ValueError, match="queue_layout"):
        ft.logits(q, k, raw, cfg, gen, tau=0.2, queue_layout="CK")


@settings(max_examples=60, deadline=None)
@given(c=st.integers(2, 64), seed=st.integers(0, 2**31 - 1),
       dtype=st.sampled_from([torch.float32, torch.float64, torch.float16, torch.bfloat16]), stored_as=st.booleans())
def test_a_square_queue_of_normalised_keys_never_false_alarms(c, seed, dtype, stored_as):
    """Keys normalised in any precision (bf16 keys in a float32 queue, as under autocast) pass as K x C."""
    g = torch.Generator().manual_seed(seed)
    keys = F.normalize(torch.randn(c, c, generator=g).to(dtype), dim=1)
    queue = keys if stored_as else keys.float()
    q = F.normalize(torch.randn(3, c, generator=g), dim=1).to(queue.dtype)
    check_moco_inputs(q, q, queue, ft.FTConfig())


def test_the_check_reads_no_data_unless_the_queue_is_square_and_unstated():
    """Shapes only (meta tensors hold no data: any read would fail), so no device work and no synchronisation."""
    meta = torch.empty(256, 128, device="meta"), torch.empty(65536, 128, device="meta")
    check_moco_inputs(meta[0], meta[0], meta[1], ft.FTConfig())
    square = torch.empty(128, 128, device="meta")
    check_moco_inputs(meta[0], meta[0], square, ft.FTConfig(), queue_layout="KC")


def test_the_guides_lift_runs_and_switches_ft_on_at_its_epoch():
    """The fenced python block under the guide's "FT in your own code": off before epoch 36, on from it."""
    section = (ROOT / "book" / "guide.md").read_text().split("### FT in your own code", 1)[1].split("\n### ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    q, k, queue = feats()
    losses = {}
    for epoch in (35, 36):
        scope = {"q": q, "k": k, "queue": queue, "gen": torch.Generator().manual_seed(0), "epoch": epoch}
        exec(code, scope)  # noqa: S102  (the guide's own block)
        losses[epoch] = scope["loss"]
    assert torch.allclose(losses[35], plain_info_nce(q, k, queue, 0.2))
    assert not torch.allclose(losses[36], plain_info_nce(q, k, queue, 0.2))

"""Where FT draws its lambdas and permutations: the host generator of every stored run (unchanged, bit for bit), or
a generator on the device (``train.ft_draws``, :class:`ftcl_core.transforms.DeviceDraws`), checkpointed and resumed
exactly.  The device path runs here on the CPU, with a CPU generator standing for the device's."""

import io

import pytest
import torch
import torch.nn.functional as F

from ftcl_core import transforms
from ftcl_core.checkpoints import IncompatibleCheckpoint, resume_draws
from ftcl_core.config import EXECUTION_KEYS, FTConfig, config_diff, load_config
from ftcl_core.execution import ft_device_draws, ft_draws_mode
from ftcl_core.losses import mixed_queue, moco_ft_logits, positive_ft
from ftcl_core.methods import StepContext
from ftcl_core.runs import RunDir

SMOKE = "configs/smoke_moco_v2.yaml"
FT = FTConfig(pos=True, neg=True, granularity="sample")

# Drawn by the host samplers before device draws existed (generator seeded 123): positive_ft's per-sample lambdas
# (Beta(2, 2) + 1, six pairs), then mixed_queue's (Beta(1.6, 1.6), ten rows) and its permutation of ten.
HOST_LAM_POS = [1.574760913848877, 1.6087770462036133, 1.43072509765625, 1.2440741062164307, 1.311777114868164,
                1.719404697418213]
HOST_LAM_NEG = [0.5941648483276367, 0.7176225185394287, 0.22095467150211334, 0.3963363468647003, 0.5915811657905579,
                0.1620655059814453, 0.801651120185852, 0.36494332551956177, 0.44998499751091003, 0.7918750047683716]
HOST_PERM = [6, 0, 2, 4, 8, 9, 5, 7, 1, 3]


def features(seed: int = 0, n: int = 6, k: int = 10, d: int = 8) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return tuple(F.normalize(torch.randn(m, d, generator=g), dim=1) for m in (n, n, k))


def ft_draws_of(gen: transforms.Draws) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """One MoCo FT step's transformed pair, mixed queue and permutation (eq. 3, Sec 4.2), all drawn from ``gen``."""
    q, k, queue = features()
    q2, k2 = positive_ft(q, k, FT, gen)
    neg, perm = mixed_queue(queue, FT, gen)
    return q2, k2, neg, perm


def test_host_draws_are_the_stored_runs_draws():
    q, k, queue = features()
    q2, k2, neg, perm = ft_draws_of(torch.Generator().manual_seed(123))
    assert perm.tolist() == HOST_PERM
    lam = torch.tensor(HOST_LAM_POS).view(-1, 1)
    want_q, want_k = transforms.extrapolate_positive(q, k, lam)
    torch.testing.assert_close(q2, want_q, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(k2, want_k, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(neg, transforms.interpolate_negatives(queue, torch.tensor(HOST_LAM_NEG).view(-1, 1), perm),
                               rtol=1e-6, atol=1e-6)
    # a step without device draws hands FT the host generator itself, in the stored runs' order
    gen = torch.Generator()
    assert StepContext(gen).ft_draws is gen and StepContext.from_config(load_config(SMOKE), gen).ft_draws is gen


def test_device_draws_come_from_the_generator_passed_and_from_nothing_else():
    host = torch.Generator().manual_seed(0)
    host_state, global_state = host.get_state(), torch.get_rng_state()
    a = ft_draws_of(transforms.DeviceDraws(torch.Generator().manual_seed(5)))
    b = ft_draws_of(transforms.DeviceDraws(torch.Generator().manual_seed(5)))
    c = ft_draws_of(transforms.DeviceDraws(torch.Generator().manual_seed(6)))
    for x, y in zip(a, b):
        assert torch.equal(x, y)
    assert not torch.equal(a[2], c[2])
    assert torch.equal(host.get_state(), host_state) and torch.equal(torch.get_rng_state(), global_state)
    assert sorted(a[3].tolist()) == list(range(10)) and a[3].tolist() != HOST_PERM  # another stream than the host's
    ctx = StepContext(host, device_draws=transforms.DeviceDraws(torch.Generator()))
    assert ctx.ft_draws is ctx.device_draws
    # the whole of MoCo's FT (union queue, hard negatives) runs on the device draws
    q, k, queue = features()
    out = moco_ft_logits(q, k, queue, FTConfig(pos=True, neg=True, union_queue=True, hard=True),
                         transforms.DeviceDraws(torch.Generator().manual_seed(1)))
    assert out.neg.shape == (6, 20) and torch.isfinite(out.neg).all() and torch.isfinite(out.pos).all()


def test_device_beta_has_the_host_samplers_distributions():
    g = transforms.DeviceDraws(torch.Generator().manual_seed(0))
    ex = transforms.sample_lambda(2.0, "sample", 20000, 4, g, shift=1.0)
    assert ex.shape == (20000, 1) and ex.dtype == torch.float32 and bool(((ex > 1) & (ex < 2)).all())
    assert abs(float(ex.mean()) - 1.5) < 0.01 and abs(float(ex.var()) - 1 / 20) < 0.003  # Beta(2, 2): var 1/20
    b = transforms.sample_beta(2.0, 1.0, (20000,), g)  # hard negatives' Beta(2, 1): mean 2/3
    assert abs(float(b.mean()) - 2 / 3) < 0.01
    low = transforms.sample_beta(0.2, 0.2, (20000,), g)  # U-shaped, var 1/(4*1.4)
    assert bool(((low >= 0) & (low <= 1)).all()) and abs(float(low.var()) - 1 / 5.6) < 0.01
    assert (
        transforms.sample_lambda(1.6, "dim", 8, 128, g).shape == (1, 128)
        and transforms.sample_lambda(1.6, "step", 8, 128, g).shape == ()
    )
    with pytest.raises(ValueError, match="Beta parameters"):
        transforms.sample_beta(0.0, 1.0, (3,), g)


def test_a_device_generators_checkpointed_state_reproduces_the_next_draws(capsys):
    draws = transforms.DeviceDraws(torch.Generator().manual_seed(9))
    ft_draws_of(draws)  # some steps in
    stored = {"device": draws.device.type, "state": draws.gen.get_state()}
    buf = io.BytesIO()
    torch.save({"rng": {"ft_gen": stored}}, buf)  # the checkpoint's round trip
    buf.seek(0)
    loaded = torch.load(buf, weights_only=True)["rng"]["ft_gen"]
    want = ft_draws_of(draws)  # the uninterrupted run's next step
    run = RunDir("/nonexistent")
    resumed = resume_draws(run, loaded, transforms.DeviceDraws(torch.Generator().manual_seed(9)), "cpu")
    for x, y in zip(ft_draws_of(resumed), want):
        assert torch.equal(x, y)
    # a run resumed without asking for device draws keeps the ones it started with, and says so
    alone = resume_draws(run, loaded, None, "cpu")
    assert torch.equal(ft_draws_of(alone)[3], want[3]) and "resumes with them" in capsys.readouterr().err


def test_a_checkpoint_without_a_device_generator_resumes_on_the_host(capsys):
    run = RunDir("/nonexistent")
    assert resume_draws(run, None, None, "cpu") is None and capsys.readouterr().err == ""  # every CPU run: silent
    assert resume_draws(run, None, transforms.DeviceDraws(torch.Generator()), "cuda") is None  # an old GPU run: host draws
    assert "on the host" in capsys.readouterr().err
    cuda_state = {"device": "cuda", "state": torch.zeros(16, dtype=torch.uint8)}
    with pytest.raises(IncompatibleCheckpoint, match="CUDA generator"):
        resume_draws(run, cuda_state, None, "cpu")


def test_ft_draws_policy_is_an_execution_detail():
    cfg = load_config(SMOKE)
    assert cfg.train.ft_draws == "auto" and "train.ft_draws" in EXECUTION_KEYS
    assert ft_draws_mode(cfg, "cpu") == "host" and ft_draws_mode(cfg, "cuda") == "device"
    assert ft_draws_mode(cfg, "cuda:1") == "device" and ft_device_draws(cfg, "cpu") is None
    dev = cfg.updated({"train.ft_draws": "device"})
    assert ft_draws_mode(dev, "cpu") == "device" and ft_draws_mode(cfg.updated({"train.ft_draws": "host"}), "cuda") == "host"
    assert config_diff(cfg, dev) == []  # not part of the run's identity
    draws = ft_device_draws(dev, "cpu")
    assert draws.device.type == "cpu" and draws.gen.initial_seed() == transforms.DeviceDraws.seed_for(cfg.seed)
    assert transforms.DeviceDraws.seed_for(0) != 0 and transforms.DeviceDraws.seed_for(0) != transforms.DeviceDraws.seed_for(1)
    # not the host generator's stream of the same seed (that would repeat the augmentation's draws)
    assert not torch.equal(torch.rand(8, generator=draws.gen), torch.rand(8, generator=torch.Generator().manual_seed(0)))


class Interrupted(Exception):
    """A crash in the middle of a run's second epoch (after its first checkpoint), as a ``kill -9`` would."""


def test_a_run_drawing_on_the_device_resumes_bit_exactly_and_replays(tmp_path):
    import numpy as np

    from ftcl_core.study.replay import replay
    from ftcl_core.training import step_callback, train

    cfg = load_config(SMOKE, ["ft.pos=true", "ft.neg=true", "ft.granularity=sample", "train.ft_draws=device",
                              "data.n_train=128", "train.batch_size=32", "moco.queue_size=64", "eval.linear_epochs=1",
                              "eval.random_init=false", "eval.raw_pixels=false"])  # two epochs of 4 steps
    train(cfg, tmp_path / "full", progress=False)

    def crash(step: int) -> None:
        if step == 6:
            raise Interrupted

    with step_callback(crash), pytest.raises(Interrupted):
        train(cfg, tmp_path / "resumed", progress=False)
    state = torch.load(RunDir(tmp_path / "resumed").checkpoint, weights_only=True)
    assert state["epoch"] == 1 and state["rng"]["ft_gen"]["device"] == "cpu"
    train(cfg, tmp_path / "resumed", progress=False)
    a, b = RunDir(tmp_path / "full").load_metrics(), RunDir(tmp_path / "resumed").load_metrics()
    assert set(a) == set(b)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    assert RunDir(tmp_path / "full").load_provenance()["execution"]["ft_draws"] == "device"
    # a replay draws as the run did (its provenance), and host draws are another stream
    again = replay(tmp_path / "full", 3)
    np.testing.assert_array_equal(again["loss"], a["loss"][:3])
    host = train(cfg.updated({"train.ft_draws": "host"}), tmp_path / "host", progress=False, max_steps=3)["metrics"]
    assert not np.array_equal(host["loss"], a["loss"][:3])

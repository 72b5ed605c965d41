"""Feature transformations (FT) of Zhu et al. (ICCV 2021), as pure tensor functions.

All functions take the L2-normalised features and a ``lam`` that is a float or a tensor that broadcasts
against the features: a scalar (one lambda per step, the released recipe), ``(N, 1)`` (one per sample)
or ``(1, D)`` (one per dimension, Sec 4.3 "dimension-level").  The samplers that draw lambda and the
permutation are separate (:func:`sample_lambda`, :func:`sample_permutation`), and draw only from a
``torch.Generator`` the caller owns, so runs are reproducible and resumable.

Where the draws are made is the caller's choice, by what it passes as ``gen`` (:data:`Draws`):

* a ``torch.Generator`` (on the CPU): the host draws every run stored so far was made with.  Beta by
  :func:`sample_gamma` (Marsaglia-Tsang, a rejection loop on the host) and ``torch.randperm`` on the CPU; the
  losses move the results to the features' device.  On a GPU that costs a host-to-device copy (and a wait)
  per draw, every step: 41 % of a ResNet-18/64 px step with a 65 536-entry queue, measured on an H200.
* a :class:`DeviceDraws`: the draws are made on its generator's device (``torch._standard_gamma`` and
  ``torch.randperm(device=...)``, no host loop, no copy, no synchronisation).  Same distributions, another
  random stream: a run that draws on the device is another sample of the same recipe, not the same numbers
  as a host-drawn run of its seed (``train.ft_draws``, :func:`ftcl_core.execution.ft_device_draws`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ftcl_core.arguments import check_counts, described, is_count, is_index, is_real
from ftcl_core.config import BETA_RANGE, Granularity  # "step" | "sample" | "dim": one definition, the config's

# the module's public names: each checks its arguments and names the fix; the rest are building blocks that
# take what these pass them
__all__ = ["DeviceDraws", "extrapolate_positive", "hard_negative_logits", "interpolate_negatives", "lambda_shape",
           "per_dimension_positive_score", "renormalize", "renormalized_positive_score", "sample_beta",
           "sample_lambda", "sample_permutation", "score_range", "transformed_positive_score", "unit_pairs"]


Lam = float | torch.Tensor


def _check_mix(caller: str, lam: object, **features: object) -> None:
    """A mix's arguments (shapes only, nothing read from the arrays): ``features`` tensors (or NumPy arrays) of one
    shape, and ``lam`` a real number or an array that broadcasts to that shape without changing it (one per step,
    sample or dimension; real, not complex)."""
    for name, x in features.items():
        if not isinstance(x, (torch.Tensor, np.ndarray)) or x.ndim < 1 or not (
                x.is_floating_point() if isinstance(x, torch.Tensor) else np.issubdtype(x.dtype, np.floating)):
            raise TypeError(f"{caller}: {name} must be a float tensor of features (N x C), got {described(x)}.")
    if isinstance(lam, complex) or "complex" in str(getattr(lam, "dtype", "")):  # metadata: nothing read
        raise TypeError(f"{caller}: lam must be real, got {described(lam)}: sample_lambda draws it (or pass lam.real).")
    kinds = {isinstance(v, np.ndarray) for v in (*features.values(), lam) if isinstance(v, (torch.Tensor, np.ndarray))}
    if len(kinds) > 1:  # torch and NumPy do not multiply each other
        raise TypeError(f"{caller}: the features and lam must all be torch tensors or all NumPy arrays: convert with "
                        "torch.as_tensor(x) (or x.numpy()).")
    shapes = [tuple(x.shape) for x in features.values()]
    if len(set(shapes)) > 1:
        raise ValueError(f"{caller}: {' and '.join(features)} must share one shape, got {shapes}.")
    if isinstance(lam, torch.Tensor) and lam.device.type == "cpu" and lam.numel() and lam.is_floating_point() and not (
            0 <= float(lam.min()) and float(lam.max()) <= 2):  # read on the CPU only: no wait on a GPU; NaN fails
        raise ValueError(f"{caller}: lam must lie in [0, 2], got values from {float(lam.min()):g} to "
                         f"{float(lam.max()):g}: sample_lambda draws it.")
    if is_real(lam) and not isinstance(lam, torch.Tensor):
        if not 0 <= lam <= 2:  # NaN too
            raise ValueError(f"{caller}: lam={lam!r} must lie in [0, 2]: the paper mixes with lam in (0, 1) "
                             "(interpolation) or (1, 2) (extrapolation, eq. 3).")
        return
    try:
        fits = isinstance(lam, (torch.Tensor, np.ndarray)) and np.broadcast_shapes(tuple(lam.shape), shapes[0]) == shapes[0]
    except ValueError:
        fits = False
    if not fits:
        raise TypeError(f"{caller}: lam must be a number or a tensor that broadcasts to the features' {shapes[0]} "
                        f"(one per step, sample or dimension: sample_lambda draws it), got {described(lam)}.")


def extrapolate_positive(z_q: torch.Tensor, z_k: torch.Tensor, lam: Lam
                         ) -> tuple[torch.Tensor, torch.Tensor]:
    """Positive extrapolation, eq. 3:
    ``z_q' = l z_q + (1-l) z_k``, ``z_k' = l z_k + (1-l) z_q``.

    With ``l`` in [1, 2] (``Beta(a, a) + 1``) the positive score drops (eq. 4,
    ``transformed_positive_score``); with ``l`` in (0, 1) the same formula is
    positive *interpolation*, the Table 3 ablation.  Gradient flows through both
    outputs (the released code has no stop-gradient on the mixed key).
    ``z_q, z_k``: N x C; a wrong shape or type is refused, naming it.
    """
    _check_mix("extrapolate_positive", lam, z_q=z_q, z_k=z_k)
    return lam * z_q + (1 - lam) * z_k, lam * z_k + (1 - lam) * z_q


def interpolate_negatives(queue: torch.Tensor, lam: Lam, perm: torch.Tensor
                          ) -> torch.Tensor:
    """Negative interpolation, Sec 4.2:
    ``Z' = l Z_neg + (1-l) Z_perm`` with ``Z_perm = queue[perm]``.

    ``lam`` in (0, 1) keeps every new negative in the convex hull of two queue
    entries; ``lam`` in (1, 2) is negative extrapolation (Supp G.1, eq. of Sec G.1).
    ``queue`` is ``(K, D)``, ``perm`` a permutation of its K rows
    (:func:`sample_permutation`): anything else is refused, naming it.
    """
    _check_mix("interpolate_negatives", lam, queue=queue)
    _check_permutation(perm, queue)
    return lam * queue + (1 - lam) * queue[perm]


def _check_permutation(perm: object, queue: torch.Tensor) -> None:
    """``queue`` K x C and ``perm`` a 1-D integer tensor of K rows (its values read on the CPU only)."""
    if queue.ndim != 2:
        raise ValueError(f"interpolate_negatives: queue must be K x C (one key per row), got {described(queue)}.")
    k = queue.shape[0]
    if not (is_index(perm) and perm.dim() == 1 and len(perm) == k):
        raise TypeError(f"interpolate_negatives: perm must be a 1-D integer tensor of the queue's {k} rows in some "
                        f"order (sample_permutation({k}, gen); uint8 reads as a mask), got {described(perm)}.")
    if perm.device.type == "cpu" and k and not (0 <= int(perm.min()) and int(perm.max()) < k
                                                and bool((perm.bincount(minlength=k) == 1).all())):
        raise ValueError(f"interpolate_negatives: perm must hold each of the queue's rows 0 to {k - 1} once (a "
                         f"permutation), got rows {int(perm.min())} to {int(perm.max())}: use sample_permutation({k}, gen).")


def hard_negative_logits(z_q: torch.Tensor, queue: torch.Tensor, lam: Lam, z_anchor: torch.Tensor | None = None) -> torch.Tensor:
    """Scores of each query against its own hard-negative queue, Supp G.2: ``Z_hard = l z_q + (1-l) Z_neg``.

    Returns ``(N, K)`` with entry ``z_q[i] . (l z_anchor[i] + (1-l) queue[j])`` without building the
    ``N x K x D`` tensor: for scalar or per-sample ``l`` it is ``l (z_q.z_anchor) + (1-l) z_q.queue``, for
    per-dimension ``l`` it is ``(l*z_anchor).z_q + ((1-l)*z_q).queue``.  ``z_anchor`` is the query that
    is mixed into the negatives (default ``z_q``; pass the clean query when ``z_q`` was extrapolated).
    """
    anchor = z_q if z_anchor is None else z_anchor
    _check_mix("hard_negative_logits", lam, z_q=z_q, z_anchor=anchor)
    if not (isinstance(z_q, torch.Tensor) and z_q.dim() == 2 and isinstance(queue, torch.Tensor) and queue.dim() == 2
            and queue.shape[1] == z_q.shape[1] and queue.dtype == z_q.dtype):
        raise ValueError(f"hard_negative_logits: z_q must be N x C and queue K x C of its dtype, got {described(z_q)} "
                         f"and {described(queue)}.")
    if isinstance(lam, torch.Tensor) and lam.dim() == 1 and lam.numel() > 1:  # (N,) reads as one per dimension
        raise ValueError(f"hard_negative_logits: lam {described(lam)} is ambiguous: pass one per sample as (N, 1), one "
                         "per dimension as (1, C) (lambda_shape gives them).")
    if isinstance(lam, torch.Tensor) and lam.dim() == 2 and lam.shape[1] > 1:  # per-dimension
        return ((lam * anchor) * z_q).sum(1, keepdim=True) + ((1 - lam) * z_q) @ queue.T
    lam_col = lam if not isinstance(lam, torch.Tensor) or lam.dim() == 0 else lam.view(-1, 1)
    return lam_col * (z_q * anchor).sum(1, keepdim=True) + (1 - lam_col) * (z_q @ queue.T)


def _check_cosine(caller: str, s: object, lam: object = 1.5) -> None:
    """A score argument: a cosine in [-1, 1] (a number, tensor or array; read: these are the formulas of eq. 4, not
    the training step), and ``lam`` a number or array of numbers in [0, 2] (NaN refused)."""
    try:
        np.broadcast_shapes(np.shape(s), np.shape(lam))
    except ValueError:
        raise ValueError(f"{caller}: s {np.shape(s)} and lam {np.shape(lam)} do not broadcast: give one lam, or one "
                         "per score.") from None
    for name, v, lo, hi in (("s", s, -1.0, 1.0), ("lam", lam, 0.0, 2.0)):
        numeric = (isinstance(v, torch.Tensor) and v.dtype != torch.bool and not v.is_complex()
                   or isinstance(v, np.ndarray) and np.issubdtype(v.dtype, np.number) and v.dtype.kind != "c")
        if not (is_real(v) or numeric):
            raise TypeError(f"{caller}: {name} must be a real number or a tensor of real numbers, got {described(v)}.")
        x = v.detach().cpu().double().numpy() if isinstance(v, torch.Tensor) else np.asarray(v, dtype=float)
        if x.size and not (x.min() >= lo and x.max() <= hi):  # NaN fails both
            raise ValueError(f"{caller}: {name} must lie in [{lo:g}, {hi:g}]"
                             + (" (a cosine of unit vectors)" if name == "s" else " (the paper's lam: (0, 1) or (1, 2))")
                             + f", got values from {x.min():g} to {x.max():g}.")


def transformed_positive_score(s: torch.Tensor | float, lam: Lam) -> torch.Tensor | float:
    """eq. 4: the score of the extrapolated pair, ``S' = S + 2 l (1 - l)(1 - S)``, for unit z_q, z_k."""
    _check_cosine("transformed_positive_score", s, lam)
    return s + 2 * lam * (1 - lam) * (1 - s)


def score_range(s: torch.Tensor | float) -> tuple:
    """eq. 4 range for ``l`` in [1, 2]: ``S'`` lies in ``[-4 + 5 S, S]`` (``l=2`` gives the low end)."""
    _check_cosine("score_range", s)
    return -4 + 5 * s, s


def renormalized_positive_score(s: torch.Tensor | float, lam: Lam) -> torch.Tensor | float:
    """eq. 4 after Supp F's re-projection onto the sphere, for unit z_q, z_k and one ``l`` per pair: with
    ``c = 2 l (l - 1)(1 - S)`` both mixed vectors have squared norm ``1 + c`` and dot product ``S - c`` (eq. 4), so
    their cosine is ``(S - c) / (1 + c)``, which is <= S for ``l`` >= 1 (since ``c (1 + S)`` >= 0)."""
    _check_cosine("renormalized_positive_score", s, lam)
    c = 2 * lam * (lam - 1) * (1 - s)
    if bool(np.any(np.asarray(1 + c if not isinstance(c, torch.Tensor) else (1 + c).detach().cpu()) == 0)):
        raise ValueError("renormalized_positive_score: at S = -1 and lam = 0.5 the two mixed vectors are zero, and "
                         "have no direction to re-project: no cosine exists there.")
    return (s - c) / (1 + c)


def per_dimension_positive_score(z_q: torch.Tensor, z_k: torch.Tensor, lam: Lam) -> torch.Tensor:
    """eq. 4 with one ``l`` per dimension (Sec 4.3), for unit z_q, z_k of shape (N, D) and ``lam`` broadcasting to
    them: ``S' = S + sum_d l_d (1 - l_d)(z_q,d - z_k,d)^2``, shape (N,). Each term is <= 0 when every ``l_d`` >= 1,
    so the pair is harder pair by pair; with one ``l`` it is eq. 4, since ``sum_d (z_q,d - z_k,d)^2 = 2 (1 - S)``."""
    _check_mix("per_dimension_positive_score", lam, z_q=z_q, z_k=z_k)
    s = (z_q * z_k).sum(-1)  # (N,)
    return s + (lam * (1 - lam) * (z_q - z_k) ** 2).sum(-1)


def renormalize(z: torch.Tensor) -> torch.Tensor:
    """Re-projection onto the unit sphere after FT (Supp F): ``z / ||z||``."""
    if not (isinstance(z, torch.Tensor) and z.is_floating_point()):
        raise TypeError(f"renormalize: z must be a float tensor of features, got {described(z)}.")
    return F.normalize(z, dim=-1)


def unit_pairs(n: int, dim: int, gen: torch.Generator, dtype: torch.dtype = torch.float64
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` pairs of unit vectors ``(z_q, z_k)`` whose cosines S spread over the whole of [-1, 1]: test pairs
    for eq. 3/4, since random pairs in high dimension all have S near 0."""
    _check_draws("unit_pairs", gen, n=n, dim=dim)
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise TypeError(f"unit_pairs: dtype must be a float dtype (torch.float64, say), got {dtype!r}.")
    zq = F.normalize(torch.randn(n, dim, generator=gen, dtype=dtype), dim=1)
    noise = F.normalize(torch.randn(n, dim, generator=gen, dtype=dtype), dim=1)
    mix = torch.rand(n, 1, generator=gen, dtype=dtype) * 2 - 1
    return zq, F.normalize(mix * zq + (1 - mix.abs()) * noise, dim=1)


# ---------------------------------------------------------------------------------------------------
# Samplers: all randomness from a caller-owned generator.
# ---------------------------------------------------------------------------------------------------

# The tag mixed with a run's seed to seed its device generator (:meth:`DeviceDraws.seeded`): "FT" in ASCII.
DEVICE_STREAM_TAG = 0x4654


@dataclass(frozen=True, eq=False)
class DeviceDraws:
    """FT's draws made on ``gen.device`` from ``gen`` (a ``torch.Generator`` on the features' device).

    The samplers take it in place of a host generator (:data:`Draws`) and then draw without a host loop and
    without a host-to-device copy: Beta from two ``torch._standard_gamma`` (:func:`sample_beta_on`), the queue's
    permutation by ``torch.randperm(..., device=gen.device)``.  A CPU generator works too (the tests exercise
    this path on the CPU that way).  The generator is not the run's host generator: its state is checkpointed
    beside it (:mod:`ftcl_core.checkpoints`), so a resumed run continues both streams exactly."""

    gen: torch.Generator

    def __post_init__(self) -> None:
        if not isinstance(self.gen, torch.Generator):
            raise TypeError(f"DeviceDraws: gen must be a torch.Generator on the features' device, got "
                            f"{described(self.gen)}: DeviceDraws.seeded(seed, device) makes one.")

    @property
    def device(self) -> torch.device:
        """The device the draws are made on (the generator's)."""
        return self.gen.device

    @staticmethod
    def seed_for(seed: int) -> int:
        """The device generator's seed of a run of ``seed``: a 64-bit word of ``numpy.random.SeedSequence([seed,
        DEVICE_STREAM_TAG])``, so it is the same on every machine and every rank (all ranks draw one
        per-sample lambda for the global batch, and one queue permutation, alike) and, on the CPU, not the host
        generator's own stream (a Mersenne Twister seeded alike would repeat the augmentation's draws)."""
        return int(np.random.SeedSequence([seed, DEVICE_STREAM_TAG]).generate_state(1, np.uint64)[0])

    @classmethod
    def seeded(cls, seed: int, device: str | torch.device) -> DeviceDraws:
        """A fresh generator on ``device`` seeded with :meth:`seed_for` ``(seed)`` (the run's config seed, >= 0)."""
        if not is_count(seed) or seed < 0:
            raise ValueError(f"DeviceDraws.seeded: seed={seed!r} must be a whole number >= 0 (the run's config seed).")
        return cls(torch.Generator(device=device).manual_seed(cls.seed_for(seed)))


Draws = torch.Generator | DeviceDraws  # a host generator (the stored runs' draws) or draws on a device



def sample_gamma(alpha: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Gamma(alpha, 1) draws by Marsaglia and Tsang's method, from ``gen`` only (torch's own Gamma
    sampler takes no generator).  For alpha < 1 uses ``Gamma(a) = Gamma(a+1) * U^(1/a)``.  The loop ends for every
    finite alpha > 0 (at an infinite one it never would: the config bounds FT's, ``config.BETA_RANGE``)."""
    if not isinstance(alpha, torch.Tensor) or alpha.device.type == "cpu" and not bool(((alpha > 0) & alpha.isfinite()).all()):
        raise ValueError(f"sample_gamma: alpha must be a tensor of finite numbers > 0 (it never ends otherwise), got "
                         f"{described(alpha)}: e.g. torch.tensor([2.0]).")  # read on the CPU only: no wait on a GPU
    alpha = alpha.double()
    boost = alpha < 1
    a = torch.where(boost, alpha + 1, alpha)
    d = a - 1.0 / 3.0
    c = 1.0 / torch.sqrt(9.0 * d)
    out = torch.empty_like(a)
    todo = torch.ones_like(a, dtype=torch.bool)
    while bool(todo.any()):
        x = torch.randn(a.shape, generator=gen, dtype=torch.float64)
        u = torch.rand(a.shape, generator=gen, dtype=torch.float64)
        v = (1 + c * x) ** 3
        ok = (v > 0) & (torch.log(u.clamp_min(1e-300)) < 0.5 * x * x + d - d * v + d * torch.log(v.clamp_min(1e-300)))
        take = todo & ok
        out = torch.where(take, d * v, out)
        todo = todo & ~ok
    u = torch.rand(a.shape, generator=gen, dtype=torch.float64)
    # at least the smallest normal float64, as torch.distributions.Gamma does, so that a Beta's X + Y is never 0 (a
    # draw of Gamma(0.05) underflows with probability about 1e-15; a nonzero draw is unchanged)
    return torch.where(boost, out * u ** (1.0 / alpha), out).clamp_min(torch.finfo(torch.float64).tiny)


def _check_beta(caller: str, a: object, b: object) -> None:
    """Beta parameters a, b: finite numbers >= ``BETA_RANGE[0]`` (NaN too; an infinite one never leaves Gamma's
    rejection loop, and below the bound Gamma's draws underflow to the smallest float: alpha 1e-5 gave 0.5 every
    time instead of 0 or 1)."""
    if not (is_real(a) and is_real(b) and BETA_RANGE[0] <= a < math.inf and BETA_RANGE[0] <= b < math.inf):
        raise ValueError(f"{caller}: Beta parameters a and b must each be one number, finite and >= {BETA_RANGE[0]} "
                         f"(below, the draws underflow); got a={a!r}, b={b!r}. The paper uses alpha in [0.2, 2.0].")


def sample_beta(a: float, b: float, shape: tuple[int, ...], gen: Draws) -> torch.Tensor:
    """Beta(a, b) draws of ``shape`` as ``X / (X + Y)``, X ~ Gamma(a), Y ~ Gamma(b) (Sec 4.1 and 4.2 draw
    lambda from a symmetric Beta(alpha, alpha)), float32.

    From a host generator: :func:`sample_gamma` on the CPU (the draws of every stored run, unchanged); from a
    :class:`DeviceDraws`: :func:`sample_beta_on` on its device."""
    _check_beta("sample_beta", a, b)
    _check_draws("sample_beta", gen)
    if not (isinstance(shape, tuple) and all(is_count(d) and d >= 0 for d in shape)):
        raise ValueError(f"sample_beta: shape must be a tuple of whole numbers >= 0, got {shape!r}.")
    if isinstance(gen, DeviceDraws):
        return sample_beta_on(a, b, shape, gen.gen)
    x = sample_gamma(torch.full(shape, float(a)), gen)
    y = sample_gamma(torch.full(shape, float(b)), gen)
    return (x / (x + y)).float()


def sample_beta_on(a: float, b: float, shape: tuple[int, ...], gen: torch.Generator) -> torch.Tensor:
    """Beta(a, b) draws of ``shape`` on ``gen.device`` from ``gen``: ``X / (X + Y)`` with X, Y from
    ``torch._standard_gamma`` (the kernel ``torch.distributions.Gamma.sample(generator=)`` runs), in float64,
    returned as float32.

    No host loop and no host-to-device copy, so on a GPU nothing waits (:func:`sample_gamma`'s rejection loop
    asks the host whether every draw was accepted).  Each Gamma draw is clamped to the smallest normal float64,
    as ``torch.distributions.Gamma`` does, so ``X + Y`` is never 0 (Gamma(0.2) underflows with probability
    about 1e-62)."""
    _check_beta("sample_beta_on", a, b)
    tiny = torch.finfo(torch.float64).tiny
    conc = {"dtype": torch.float64, "device": gen.device}
    x = torch._standard_gamma(torch.full(shape, float(a), **conc), generator=gen).clamp_min(tiny)
    y = torch._standard_gamma(torch.full(shape, float(b), **conc), generator=gen).clamp_min(tiny)
    return (x / (x + y)).float()


def lambda_shape(granularity: Granularity, n: int, dim: int) -> tuple[int, ...]:
    """Shape of lambda for one step: ``()`` per step (the released recipe), ``(n, 1)`` per sample,
    ``(1, dim)`` per dimension (Sec 4.3, Table 7's last column)."""
    check_counts("lambda_shape", n=n, dim=dim)
    shapes = {"step": (), "sample": (n, 1), "dim": (1, dim)}
    if granularity not in shapes:
        raise ValueError(f"unknown lambda granularity {granularity!r}; choose one of {sorted(shapes)}.")
    return shapes[granularity]


def _check_draws(caller: str, gen: object, **counts: object) -> None:
    """A sampler's arguments: each of ``counts`` a whole number >= 1, ``gen`` a generator the caller owns."""
    check_counts(caller, **counts)
    if not isinstance(gen, (torch.Generator, DeviceDraws)):
        raise TypeError(f"{caller}: gen must be a torch.Generator you seed (or a DeviceDraws), got {described(gen)}: "
                        "every draw of FT comes from the caller's generator, never torch's global one.")


def sample_lambda(
    alpha: float, granularity: Granularity, n: int, dim: int, gen: Draws,
    shift: float = 0.0, beta: float | None = None,
) -> torch.Tensor:
    """lambda ~ Beta(alpha, beta or alpha) + shift, shaped for ``granularity``; on the CPU from a host generator,
    on its device from a :class:`DeviceDraws` (:func:`sample_beta`).

    ``shift=1`` gives extrapolation (eq. 3, lambda in (1, 2)); ``shift=0`` interpolation (Sec 4.2).  ``n`` and
    ``dim`` are whole numbers >= 1, ``shift`` finite, ``gen`` the caller's generator: anything else is refused.
    """
    _check_draws("sample_lambda", gen, n=n, dim=dim)
    if not (is_real(shift) and not isinstance(shift, torch.Tensor) and shift in (0, 1)):
        raise ValueError(f"sample_lambda: shift={shift!r} must be 1 (extrapolation, lambda in (1, 2)) or 0 "
                         "(interpolation, lambda in (0, 1)).")
    return sample_beta(alpha, alpha if beta is None else beta, lambda_shape(granularity, n, dim), gen) + shift


def sample_permutation(k: int, gen: Draws) -> torch.Tensor:
    """A random permutation of the K queue entries (Sec 4.2, ``Z_perm``): on the CPU from a host generator, on
    its device from a :class:`DeviceDraws` (``torch.randperm`` runs there: no copy of K indices per step)."""
    _check_draws("sample_permutation", gen, k=k)
    if isinstance(gen, DeviceDraws):
        return torch.randperm(k, generator=gen.gen, device=gen.device)
    return torch.randperm(k, generator=gen)

"""An experiment file and what it asks for: its settings, seeds and claims, each profile's base config, and the
config and folder of every run (:func:`planned_runs`).

An experiment file (``experiments/*.yaml``) names a base config per profile, the seeds, and one
override set per setting::

    table: T1
    title: Momentum sweep (Table 1)
    base: {cpu: configs/cpu_moco_v1.yaml, gpu: configs/gpu_in100_moco_v1.yaml}
    seeds: [0, 1, 2]
    settings:
      m=0.99: {moco.momentum: 0.99}
    paper: {m=0.99: 56.2}

An optional ``common:`` mapping holds overrides that every setting shares (a calibration's budget and split).

Profiles: ``cpu`` (the embedded data at the scale of the base config; runs stored under ``results/``),
``smoke`` (the same settings on tiny data for CI, under ``runs/smoke/``), ``gpu`` (the paper's recipe on
ImageNet-100, under ``runs/gpu/``).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from ftcl_core.config import (
    EXECUTION_KEYS,
    ConfigError,
    RunConfig,
    _flatten,
    as_config,
    load_config,
    load_yaml_mapping,
)
from ftcl_core.study.results.verdicts import KINDS, Claim

PROFILES = ("smoke", "cpu", "gpu")
ROOT = Path(__file__).resolve().parents[2]  # the repository: ftcl_core/study/ is two below
SMOKE_OVERRIDES = [
    "data.n_train=512", "data.n_test=256", "data.n_val=256", "augment.out_size=16", "model.dim=32", "model.bn_splits=2",
    "moco.queue_size=128", "train.epochs=2", "train.batch_size=64", "stats.sync_every=4",
    "eval.linear_epochs=5", "eval.knn_k=20",
]


def config_identity(cfg: RunConfig | dict) -> tuple:
    """A hashable key that two configs share exactly when :func:`config_diff` finds no difference between them
    (what a run computes; the execution keys left out): an index of stored runs by what they computed. Values
    compare by ``repr``, so here NaN equals NaN and -0.0 differs from 0.0 (no config holds either)."""
    flat = _flatten(as_config(cfg).to_dict())
    return tuple(sorted((k, repr(v)) for k, v in flat.items() if k not in EXECUTION_KEYS))


@dataclass
class Experiment:
    """An experiment file. ``claims`` holds the claims the file declares (see :func:`parse_claims`); with the
    claims read off the paper's numbers (:meth:`paper_claim`) they make :meth:`claims_of`."""

    table: str
    title: str
    base: dict[str, str]
    seeds: list[int]
    settings: dict[str, dict]
    paper: dict[str, object]  # setting -> the paper's top-1, or "collapse" (Table 1)
    path: Path
    compare: dict[str, str]  # setting -> the setting it is compared with (default: the first setting)
    claims: tuple[Claim, ...] = ()  # the claims the file declares beyond (or instead of) the paper's numbers
    common: dict | None = None  # overrides every setting shares (e.g. a calibration's budget and split)

    def overrides(self, setting: str, seed: int) -> dict:
        """The overrides of one run: the shared ones, the setting's, and its seed."""
        return {**(self.common or {}), **self.settings[setting], "seed": seed}

    @classmethod
    def load(cls, path: str | os.PathLike) -> Experiment:
        if not str(path).strip():  # Path("") is ".", a folder
            raise ConfigError("the experiment file's path is empty: name one, e.g. experiments/table7_ft_v1.yaml.")
        p = Path(path)
        if not p.is_file():
            p = ROOT / path
        if p.is_dir():  # a folder of experiment files: name them, or let the shell list them
            raise ConfigError(f"experiment file {path} is a folder: name its files, e.g. {path}/*.yaml.")
        if not p.is_file():
            raise ConfigError(f"experiment file {path} not found; see the experiments/ folder.")
        d = yaml.safe_load(p.read_text()) or {}
        if not isinstance(d, dict):
            raise ConfigError(f"experiment file {p} holds {type(d).__name__} {d!r}, not a mapping of table, base and "
                              "settings; see experiments/table7_ft_v1.yaml for the layout.")
        missing = [k for k in ("table", "base", "settings") if k not in d]
        if missing:
            raise ConfigError(f"experiment file {p} lacks {missing}; see experiments/table7_ft_v1.yaml for the layout.")
        if unknown := sorted(map(str, set(d) - set(EXPERIMENT_KEYS))):
            close = {k: difflib.get_close_matches(k, EXPERIMENT_KEYS, n=1) for k in unknown}
            raise ConfigError(f"experiment file {p}: unknown key(s) {unknown} would be ignored"
                              + "".join(f"; {k}: did you mean {c[0]}?" for k, c in close.items() if c)
                              + f" (an experiment file holds {', '.join(EXPERIMENT_KEYS)}).")
        settings = d["settings"]
        if not isinstance(settings, dict) or not settings:
            raise ConfigError(f"experiment file {p}: `settings` must map at least one name to its overrides.")
        check_experiment_names(p, d["table"], settings, d.get("base"), d.get("seeds", [0]))
        first = next(iter(settings))
        compare = d.get("compare") or {k: first for k in settings if k != first}
        if not isinstance(compare, dict) or not all(isinstance(v, str) for v in compare.values()):
            raise ConfigError(f"experiment file {p}: `compare` must map each setting to the setting it is compared "
                              f"with, e.g. compare: {{{next(reversed(settings))!r}: {first!r}}}.")
        if not isinstance(d.get("title", ""), str) or not isinstance(d.get("question", ""), str):
            raise ConfigError(f"experiment file {p}: `title` and `question` are text, one line each.")
        paper = d.get("paper") or {}
        if not isinstance(paper, dict):
            raise ConfigError(f"experiment file {p}: `paper` must map settings to the paper's top-1 %, e.g. "
                              f"paper: {{{first!r}: 77.5}}.")
        claims = parse_claims(d.get("claims"), compare, p)
        named = {c.arm for c in claims} | {c.reference for c in claims if c.kind != "sanity"}
        unknown = sorted({*compare, *compare.values(), *paper, *named} - set(settings))
        if unknown:
            raise ConfigError(f"experiment file {p} names unknown setting(s) {unknown} in compare/paper/claims; "
                              f"its settings are {list(settings)}.")
        bad = {k: v for k, v in paper.items() if v != "collapse" and not (isinstance(v, (int, float))
                                                                         and not isinstance(v, bool) and math.isfinite(v))}
        if bad:
            raise ConfigError(f"experiment file {p}: {bad}: a paper entry is a finite number or 'collapse', a claim "
                              "is 'above' or 'below'.")
        common = d.get("common") or {}
        if not isinstance(common, dict):
            raise ConfigError(f"experiment file {p}: `common` must map config keys to values, e.g. {{train.epochs: 10}}.")
        if where := next((f"setting {k!r}" for k, v in settings.items() if "seed" in v), "common" if "seed" in common
                         else None):
            raise ConfigError(f"experiment file {p}: {where} sets `seed`, which each run takes from `seeds`; drop it "
                              "and list the seeds in `seeds: [...]`.")
        if hit := next(((w, k, x) for w, v in [*((f"setting {n!r}", v) for n, v in settings.items()), ("common", common)]
                        for k, x in _flatten(v).items() if k in EXECUTION_KEYS), None):  # arms differing there are copies
            raise ConfigError(f"experiment file {p}: {hit[0]} sets {hit[1]}, which says how runs execute, not what they "
                              f"compute: drop it and give it to the sweep, e.g. sweep {p} --set {hit[1]}={hit[2]}.")
        if same := next((k for k, v in compare.items() if k == v), None):
            raise ConfigError(f"experiment file {p}: compare sets {same!r} against itself; name another setting as "
                              "its reference.")
        exp = cls(d["table"], d.get("title", d["table"]), d["base"], list(d.get("seeds", [0])),
                  settings, paper, p, compare, (), common)
        try:
            exp.claims = tuple(exp.with_paper_effect(c) for c in claims)
        except ValueError as e:  # a claim's stated effect against the file's own numbers
            raise ConfigError(f"experiment file {p}: {e}.") from None
        return exp

    def paper_number(self, setting: str) -> float:
        """The paper's top-1 for ``setting``; NaN where it states none (or states a collapse)."""
        v = self.paper.get(setting)
        return float(v) if isinstance(v, (int, float)) else math.nan

    def paper_effect(self, arm: str, reference: str) -> float | None:
        """The paper's ``arm - reference`` in points, rounded to the paper's two decimals; None without both numbers."""
        a, b = self.paper_number(arm), self.paper_number(reference)
        return None if math.isnan(a) or math.isnan(b) else round(a - b, 2)

    def paper_pair(self, arm: str, reference: str) -> tuple[float, float] | None:
        """The paper's two readouts (reference, arm) in % top-1; None without both numbers."""
        a, b = self.paper_number(arm), self.paper_number(reference)
        return None if math.isnan(a) or math.isnan(b) else (b, a)

    def with_paper_effect(self, claim: Claim) -> Claim:
        """``claim`` with the paper's effect and two readouts read off the file's ``paper:`` numbers where the
        claim states none (the effect from a claim's own two numbers where it gives them)."""
        if claim.kind == "sanity":
            return claim
        numbers = claim.paper or self.paper_pair(claim.arm, claim.reference)
        effect = claim.effect
        if effect is None and numbers is not None:
            effect = round(numbers[1] - numbers[0], 2)
        return dataclasses.replace(claim, effect=effect, paper=numbers)

    def paper_claim(self, setting: str) -> Claim | None:
        """The claim the paper's numbers make for ``setting``: Table 1's sanity checks against the random-init
        encoder (``collapse``: below it, a number: above it), else a difference against ``compare[setting]``
        with the paper's effect, where the paper gives both numbers."""
        if self.table.split("-")[0] == "T1":  # T1, or T1 on another data set (T1-fmnist)
            if setting not in self.paper:
                return None
            collapse = self.paper[setting] == "collapse"
            return Claim(setting, "random init", "sanity", direction=-1 if collapse else 1, source="Tab. 1",
                         text="collapses (below random init)" if collapse else "learns (above random init)")
        ref = self.compare.get(setting)
        effect = self.paper_effect(setting, ref) if ref else None
        return None if effect is None else Claim(setting, ref, "difference", effect, source=f"Tab. {self.table}",
                                                 paper=self.paper_pair(setting, ref))

    def claims_of(self, setting: str) -> list[Claim]:
        """Every claim on ``setting`` as arm: first its primary claim (against ``compare[setting]``, or Table 1's
        sanity check), declared or read off the paper's numbers, then the file's other claims in their order."""
        declared = [c for c in self.claims if c.arm == setting]
        derived = self.paper_claim(setting)
        ref = derived.reference if derived is not None else self.compare.get(setting)
        primary = next((c for c in declared if c.reference == ref), derived)
        return ([primary] if primary is not None else []) + [c for c in declared if c is not primary]


CLAIM_KEYS = ("arm", "vs", "kind", "effect", "margin", "direction", "source", "text", "paper")


def parse_claims(raw, compare: dict[str, str], path: Path) -> list[Claim]:
    """An experiment file's ``claims:``, in one of two forms: a mapping ``{setting: above | below}`` (a difference
    against ``compare[setting]`` whose size the paper does not state), or ``{setting: {vs, kind, effect, margin,
    source}}``; or a list of such mappings, each with its ``arm``. ``kind`` (default ``difference``) is one of
    :data:`~ftcl_core.study.results.verdicts.KINDS`; ``effect`` is the paper's ``arm - vs`` in points (default: read off
    ``paper``, else the file's ``paper:`` numbers); ``margin`` is an equivalence claim's ± points; ``paper`` the
    paper's two readouts ``[reference, arm]`` in % where the file's ``paper:`` lacks them (a diagnosis quoting
    Table 7), from which the claim's size on the error scale is read."""
    if not raw:
        return []
    items = [{"arm": k, **(v if isinstance(v, dict) else {"direction": v})} for k, v in raw.items()] \
        if isinstance(raw, dict) else list(raw)
    out = []
    for item in items:
        if not isinstance(item, dict) or "arm" not in item or sorted(set(item) - set(CLAIM_KEYS)):
            raise ConfigError(f"experiment file {path}: claim {item!r} must be a mapping with an `arm` and only "
                              f"the keys {CLAIM_KEYS}.")
        direction = item.get("direction", "above")
        if direction not in ("above", "below") or item.get("kind", "difference") not in KINDS:
            raise ConfigError(f"experiment file {path}: claim {item!r}: a claim is 'above' or 'below', of a kind in "
                              f"{KINDS}.")
        ref = item.get("vs", compare.get(item["arm"]))
        if ref is None:
            raise ConfigError(f"experiment file {path}: claim {item!r} names no reference (`vs`) and its arm has "
                              "no `compare` entry.")
        numbers = item.get("paper")
        try:
            if numbers is not None and not (isinstance(numbers, list) and len(numbers) == 2):
                raise ValueError(f"claim {item!r}: `paper` is the paper's two readouts [reference, arm]")
            effect = None if item.get("effect") is None else float(item["effect"])
            if effect is not None and not math.isfinite(effect):
                raise ValueError(f"claim {item!r}: `effect` must be a finite number of points")
            out.append(Claim(item["arm"], ref, item.get("kind", "difference"), effect,
                             1 if direction == "above" else -1, item.get("margin"), item.get("source", ""),
                             item.get("text", ""), None if numbers is None else (float(numbers[0]), float(numbers[1]))))
        except (ValueError, TypeError) as e:
            raise ConfigError(f"experiment file {path}: claim of {item['arm']!r}: {e}.") from None
    return out


def profile_root(profile: str) -> Path:
    """Where a profile's runs live: ``results/cpu`` (committed), ``runs/smoke``, ``runs/gpu``."""
    if profile not in PROFILES:
        raise ConfigError(f"unknown profile {profile!r}; choose one of {PROFILES}.")
    env = os.path.expanduser(os.environ.get("FTCL_RUNS_ROOT", ""))  # "~/store" is the home folder's, as a shell says
    if env:
        if blocked := next((p for p in (Path(env), *Path(env).parents) if p.exists() and not p.is_dir()), None):
            raise ConfigError(f"FTCL_RUNS_ROOT={env}" + (" is" if blocked == Path(env) else f" lies under {blocked},")
                              + " a file, not a folder: point FTCL_RUNS_ROOT at a folder for the runs (made if "
                              "missing), or unset it to use the repository's store.")
        return Path(env) / profile
    return ROOT / ("results" if profile == "cpu" else "runs") / profile


STORED = ROOT / "results" / "cpu"  # the committed runs of the cpu profile, the evidence the book's findings rest on


def writes_committed(profile: str) -> bool:
    """Whether the summaries of ``profile``'s runs replace the committed ones (``results/*.csv``, the README's
    findings): only the cpu profile read from the committed store; a store elsewhere (``FTCL_RUNS_ROOT``) gets its
    own files in its folder, so a scratch store never overwrites the evidence."""
    return profile == "cpu" and profile_root(profile).resolve() == STORED.resolve()


def resolve(base: str, overrides: list[str] | dict, profile: str) -> RunConfig:
    """The full config of a setting under a profile (smoke shrinks everything for CI).

    A setting's value may depend on the profile: ``{cpu: 8192, gpu: 131072}`` (Table 5's 2K) or
    ``{cpu: 9, gpu: 30}`` (Table 6's start epoch, scaled to each profile's run length).  The smoke profile
    takes its own entry, else the cpu one.
    """
    scaled = None  # (the setting's queue, the smoke profile's): named when the scaled queue is refused
    if isinstance(overrides, dict):
        picked = {k: _for_profile(k, v, profile) for k, v in overrides.items()}
        if (profile == "smoke" and "moco.queue_size" in overrides and isinstance(picked["moco.queue_size"], int)
                and not isinstance(picked["moco.queue_size"], bool) and not _has_entry(overrides["moco.queue_size"], "smoke")):
            # the smoke data holds 512 images: scale a setting's queue as the profile scales the default (4096 -> 128)
            scaled = (picked["moco.queue_size"], picked["moco.queue_size"] // 32)
            picked["moco.queue_size"] = scaled[1]
        if profile == "smoke":
            # smoke trains every setting for its own 2 epochs: a 120-epoch setting runs the same code as a 30-epoch
            # one, and taking its length at face value made CI train 120 epochs (2.7 of chapter 7's 4 minutes)
            dropped = {key: picked.pop(key) for key in ("train.epochs", "optim.milestones")
                       if key in overrides and not _has_entry(overrides[key], "smoke")}
            if dropped:  # checked as the cpu profile reads them: a value it refuses is refused here too
                load_config(_path(base), [f"{k}={_yaml_scalar(v)}" for k, v in dropped.items()])
        overrides = picked
    items = overrides if isinstance(overrides, list) else [f"{k}={_yaml_scalar(v)}" for k, v in overrides.items()]
    extra = SMOKE_OVERRIDES if profile == "smoke" else []
    base_keys = load_yaml_mapping(_path(base), "config file", "configs/cpu_moco_v2.yaml")
    method = next((yaml.safe_load(i.split("=", 1)[1]) for i in reversed(items) if i.startswith("method=")),
                  base_keys.get("method", "moco"))
    if method != "moco":  # the smoke profile's queue is MoCo's key alone
        extra = [o for o in extra if not o.startswith("moco.")]
    split = next((yaml.safe_load(i.split("=", 1)[1]) for i in reversed(items) if i.startswith("data.eval_split=")),
                 (base_keys.get("data") or {}).get("eval_split", "test"))
    # the smoke profile's validation size sizes a validation split alone, its test size a test split alone
    extra = [o for o in extra if not o.startswith("data.n_test=" if split == "val" else "data.n_val=")]
    try:
        return load_config(_path(base), [*extra, *items])
    except ConfigError as err:
        if scaled is None or "queue_size" not in str(err):
            raise
        raise ConfigError(f"{err} The smoke profile scales a setting's queue by 1/32 ({scaled[0]} -> {scaled[1]}, as "
                          f"the default 4096 -> 128); give the setting its own smoke value, e.g. moco.queue_size: "
                          f"{{cpu: {scaled[0]}, smoke: 128}}.") from None


def _has_entry(value, profile: str) -> bool:
    return isinstance(value, dict) and profile in value


def _for_profile(key: str, value, profile: str):
    """``value``, or its entry for ``profile`` when it is a mapping keyed by profile names."""
    if value == {}:  # neither a value nor a profile's entry: it would merge as nothing, the default kept unsaid
        raise ConfigError(f"setting value {key}={{}} is an empty mapping: give the value, or one per profile "
                          "({cpu: ..., gpu: ...}).")
    if not (isinstance(value, dict) and value and set(value) <= set(PROFILES)):
        return value
    if profile in value:
        return value[profile]
    if profile == "smoke" and "cpu" in value:
        return value["cpu"]
    raise ConfigError(f"setting value {key}={value} has no entry for the {profile!r} profile; add `{profile}: ...` to it.")


def _path(p: str) -> Path:
    return p if Path(p).is_file() else ROOT / p


def _yaml_scalar(v) -> str:
    return yaml.safe_dump(v, default_flow_style=True).strip().removesuffix("...").strip()


EXPERIMENT_KEYS = ("table", "title", "question", "paper_label", "base", "seeds", "settings", "common", "compare",
                   "paper", "claims")  # the keys an experiment file may hold (experiments/table7_ft_v1.yaml shows them)


MAX_NAME = 100  # characters of a table or setting name: each names a folder (a file system allows 255 bytes)


def check_experiment_names(path: Path, table: object, settings: dict, base: object, seeds: object) -> None:
    """Refuse, with the fix, what would put runs in the wrong folder or count one run twice: a table name that is not
    one folder name, settings that are not mappings or that share a folder (:func:`setting_folder`), a base that is
    not a mapping of profiles, and seeds that are not a non-empty list of distinct integers."""
    if not isinstance(table, str) or not table or "/" in table or "\\" in table or table in (".", ".."):
        raise ConfigError(f"experiment file {path}: table {table!r} must be one folder name (no '/', not '..'), "
                          "e.g. table: T1.")
    for kind, name in (("table", table), *(("setting name", n) for n in settings if isinstance(n, str))):
        if not name.isprintable() or len(name) > MAX_NAME:  # a NUL byte, a line break; a folder name too long
            raise ConfigError(f"experiment file {path}: {kind} {name[:40]!r}{'...' if len(name) > 40 else ''} names a "
                              f"folder: write it in at most {MAX_NAME} printable characters (no control characters).")
    if not isinstance(base, dict):
        raise ConfigError(f"experiment file {path}: `base` must map profiles to configs, e.g. "
                          "base: {cpu: configs/cpu_cal_moco_v1.yaml}.")
    if other := next((k for k in base if k not in ("cpu", "gpu")), None):
        raise ConfigError(f"experiment file {path}: base {other!r} is not a profile with a base of its own: `base` "
                          "names cpu and gpu (the smoke profile shrinks the cpu base); drop it.")
    if bad := next((k for k, v in base.items() if not isinstance(v, str) or not v), None):
        raise ConfigError(f"experiment file {path}: base {bad}: {base[bad]!r} is not a config file's path, e.g. "
                          "base: {cpu: configs/cpu_cal_moco_v1.yaml}.")
    folders: dict[str, str] = {}
    for name, overrides in settings.items():
        if not isinstance(name, str) or not name.strip() or setting_folder(name).startswith("."):
            raise ConfigError(f"experiment file {path}: setting name {name!r} must be a text that names a folder "
                              "(not empty, not starting with '.', which hides it or climbs out of the table's: a number "
                              "in quotes, e.g. \"m=0.99\": {...}).")
        if not isinstance(overrides, dict):
            raise ConfigError(f"experiment file {path}: setting {name!r} must map config keys to values, e.g. "
                              f"{name}: {{ft.pos: true}} (it holds {type(overrides).__name__} {overrides!r}).")
        other = folders.setdefault(setting_folder(str(name)), str(name))
        if other != str(name):
            raise ConfigError(f"experiment file {path}: settings {other!r} and {name!r} would share the folder "
                              f"{setting_folder(str(name))}; rename one.")
    if (not isinstance(seeds, list) or not seeds or not all(isinstance(x, int) and not isinstance(x, bool)
                                                            for x in seeds)):
        raise ConfigError(f"experiment file {path}: `seeds` must be a non-empty list of integers, e.g. seeds: [0, 1, 2] "
                          f"(it holds {seeds!r}).")
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"experiment file {path}: `seeds` {seeds} names a seed twice; each seed is one run.")


def setting_folder(setting: str) -> str:
    """The folder name of a setting's runs (spaces and slashes as underscores)."""
    return setting.replace("/", "_").replace(" ", "_")


def run_dir(exp: Experiment, setting: str, seed: int, profile: str, root: str | os.PathLike | None = None) -> Path:
    """The folder of one run: ``<root>/<table>/<setting>/seed<N>``, under :func:`profile_root` unless ``root``."""
    safe = setting_folder(setting)
    return (Path(root) if root else profile_root(profile)) / exp.table / safe / f"seed{seed}"


def base_for(exp: Experiment, profile: str) -> str:
    key = "gpu" if profile == "gpu" else "cpu"
    if key not in exp.base:
        raise ConfigError(f"experiment {exp.table} has no {key} base config.")
    if not Path(_path(exp.base[key])).is_file():
        raise ConfigError(f"experiment file {exp.path}: base {key}: {exp.base[key]} is not a file (read from here or "
                          f"from the repository root, {ROOT}); name an existing config, e.g. configs/cpu_cal_moco_v1.yaml.")
    return exp.base[key]


DATA_NAMES = {"shapes": "embedded shapes", "fashion_mnist": "Fashion-MNIST", "imagefolder": "ImageFolder",
              "cifar10": "CIFAR-10", "cifar100": "CIFAR-100", "stl10": "STL-10"}


def data_set(exp: Experiment, profile: str) -> str:
    """The data set an experiment's runs train on under a profile (``data.name`` of its base config)."""
    return resolve(base_for(exp, profile), {}, profile).data.name


def data_label(exp: Experiment, profile: str) -> str:
    """:func:`data_set` as a reader's name for it ("embedded shapes", "Fashion-MNIST", ...)."""
    data = data_set(exp, profile)
    return DATA_NAMES.get(data, data)


def recipe_kind(base: str) -> str:
    """``calibrated`` for a CPU recipe calibrated without FT (``configs/cpu_cal_*``), ``original`` for the CPU
    profile's original recipes (``configs/cpu_*``), else ``""`` (the smoke and GPU configs)."""
    name = Path(base).name
    return "calibrated" if name.startswith("cpu_cal_") else "original" if name.startswith("cpu_") else ""


def seed_list(seeds) -> list[int] | None:
    """``seeds`` as a list of ints: a list or tuple of ints, or the text of one as a papermill parameter passes it
    (``"[0, 1, 2]"``, ``"0 1 2"``, ``"0,1,2"``); None stays None. Anything else is refused with the form it takes."""
    if seeds is None:
        return None
    if isinstance(seeds, str):
        text = seeds.strip()
        try:
            parsed = yaml.safe_load(text) if text.startswith("[") else [int(s) for s in text.replace(",", " ").split()]
        except (yaml.YAMLError, ValueError):
            parsed = None
        seeds = parsed
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        seeds = [seeds]
    if not isinstance(seeds, (list, tuple)) or not seeds or not all(isinstance(s, int) and not isinstance(s, bool)
                                                                     and s >= 0 for s in seeds):
        raise ConfigError(f"seeds={seeds!r}: give a list of seeds (integers >= 0), e.g. [0, 1, 2] (papermill: "
                          '-p seeds "[0, 1, 2]").')
    if twice := sorted({s for s in seeds if list(seeds).count(s) > 1}):
        raise ConfigError(f"seeds={list(seeds)!r} names seed(s) {twice} twice, which would count one run as two: "
                          "give each seed once.")
    return list(seeds)


def planned_runs(exp: Experiment, profile: str, seeds: list[int] | None = None, settings: list[str] | None = None,
                 execution: dict | None = None) -> list[tuple[str, int, RunConfig, Path]]:
    """(setting, seed, config, run folder) of every run an experiment asks for under a profile, seed-major (the
    order a sweep trains them in, so that every setting has seed 0 before any has seed 1)."""
    return [(name, seed, _setting_config(exp, name, seed, profile, execution), run_dir(exp, name, seed, profile))
            for seed in (seeds if seeds is not None else exp.seeds) for name in (settings or list(exp.settings))]


def _setting_config(exp: Experiment, name: str, seed: int, profile: str, execution: dict | None) -> RunConfig:
    """:func:`resolve` for one planned run; a refusal names the file, the setting and the profile it was read under."""
    try:
        return resolve(base_for(exp, profile), {**exp.overrides(name, seed), **(execution or {})}, profile)
    except ConfigError as err:
        hint = (" (the smoke profile trains each setting 2 epochs: give a value per profile, e.g. {cpu: 9, smoke: 1})"
                if profile == "smoke" and "epoch" in str(err) else "")
        raise ConfigError(f"experiment file {exp.path}, setting {name!r}, profile {profile}: {err}{hint}") from None


def calibrated_base(exp: Experiment) -> Experiment:
    """``exp`` on the calibrated recipe of its CPU base (``configs/cpu_X.yaml`` -> ``configs/cpu_cal_X.yaml``, where
    that file exists), the rerun that issue "fair baselines" asks of every table; unchanged where there is none."""
    if "cpu" not in exp.base:
        return exp
    cpu = Path(exp.base["cpu"])
    if recipe_kind(str(cpu)) != "original":
        return exp
    cal = cpu.with_name("cpu_cal_" + cpu.name.removeprefix("cpu_"))
    if not Path(_path(str(cal))).is_file():
        return exp
    return dataclasses.replace(exp, base={**exp.base, "cpu": str(cal)})


def ft_kind(exp: Experiment, setting: str, profile: str) -> str:
    """What a setting's resolved config (base, shared and own overrides) does to the pairs: ``none`` without FT,
    ``late start`` for FT switched on after the first epoch (Table 6), else ``harder`` when it moves the query away
    from its key or a negative towards the query (positive extrapolation, eq. 3; negative extrapolation, Supp G.1;
    hard negatives, Supp G.2), ``negatives mixed`` for negative interpolation alone (Sec 4.2, re-normalised or
    not), ``other`` for the rest (e.g. Table 3's positive interpolation)."""
    ft = resolve(base_for(exp, profile), exp.overrides(setting, 0), profile).ft
    if not (ft.pos or ft.neg or ft.hard):
        return "none"
    if ft.start_epoch > 0:
        return "late start"
    if (ft.pos and ft.pos_mode == "extrapolate") or (ft.neg and ft.neg_mode == "extrapolate") or ft.hard:
        return "harder"
    return "negatives mixed" if ft.neg and not ft.pos else "other"

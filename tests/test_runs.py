"""Configs, overrides, validation errors and atomic writes."""

import pytest

from ftcl_core.config import ConfigError, config_diff, load_config, parse_overrides
from ftcl_core.runs import atomic_write_bytes


def test_overrides_are_typed_and_nested():
    o = parse_overrides(["ft.pos=true", "moco.momentum=0.9", "augment.crop_scale=[0.3, 1.0]"])
    assert o == {"ft": {"pos": True}, "moco": {"momentum": 0.9}, "augment": {"crop_scale": [0.3, 1.0]}}


def test_config_file_then_overrides():
    cfg = load_config("configs/cpu_moco_v2.yaml", ["ft.pos=true", "seed=3"])
    assert cfg.ft.pos is True and cfg.seed == 3 and cfg.moco.tau == 0.2
    assert load_config("configs/cpu_moco_v1.yaml").moco.tau == 0.07


@pytest.mark.parametrize(
    "override, match",
    [
        ("moco.momentum=1.5", "outside"),
        ("moco.tau=0", "tau"),
        ("moco.queue_size=8", "smaller than train.batch_size"),
        ("ft.alpha_ex=0", "alpha_ex"),
        ("ft.alpha_in=-1", "alpha_in"),
        ("moco.momentum_typo=1", "did you mean"),
        ("ft.granularity=batch", "granularity"),
        ("moco.queue_size=20000", "not below data.n_train"),
        ("ft.pos=maybe", "ft.pos='maybe' must be true or false"),
        ("moco.momentum=true", "must be a number"),
        ("train.epochs=2.5", "must be an integer"),
        ("stats.sync_every=0", "stats.sync_every=0 must be >= 1"),
        ("train.checkpoint_every=0", "must be >= 1"),
        ("data.name=shape", "did you mean 'shapes'"),
        ("optim.schedule=cos", "did you mean 'cosine'"),
        ("model.encoder=resnet1o_w16", "unknown encoder"),
        ("ft.union_queue=true", "set ft.neg=true too"),
        ("ft.renorm_neg=true", "set ft.neg=true too"),
        ("augment.crop_scale=[1.5, 0.2]", "0.01 <= low <= high <= 1"),
    ],
)
def test_bad_values_name_the_key_and_the_fix(override, match):
    with pytest.raises(ConfigError, match=match):
        load_config("configs/cpu_moco_v2.yaml", [override])


def test_ft_that_would_never_switch_on_is_refused():
    with pytest.raises(ConfigError, match="never switches on"):
        load_config("configs/cpu_moco_v2.yaml", ["ft.pos=true", "ft.start_epoch=30"])
    with pytest.raises(ConfigError, match=r"ft.start_epoch=-1 must be an epoch >= 0"):  # FTConfig's own check now
        load_config("configs/cpu_moco_v2.yaml", ["ft.neg=true", "ft.start_epoch=-1"])
    with pytest.raises(ConfigError, match="none is on"):  # no FT: a start epoch would be ignored (issue 64)
        load_config("configs/cpu_moco_v2.yaml", ["ft.start_epoch=30"])


def test_numbers_yaml_reads_as_strings_are_numbers():
    cfg = load_config("configs/cpu_moco_v2.yaml", ["optim.lr=1e-4", "optim.weight_decay=5e-4", "data.n_train=1e4"])
    assert cfg.optim.lr == 1e-4 and cfg.optim.weight_decay == 5e-4
    assert cfg.data.n_train == 10000 and isinstance(cfg.data.n_train, int)


def test_missing_config_file_and_bad_override_syntax():
    with pytest.raises(ConfigError, match="configs/cpu_moco_v2.yaml"):
        load_config("configs/nope.yaml")
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        parse_overrides(["ft.pos"])


def test_config_diff():
    a = load_config(None)
    b = load_config(None, ["ft.pos=true"])
    assert config_diff(a, b) == ["ft.pos"]


def test_atomic_write_leaves_no_partial_file(tmp_path, monkeypatch):
    target = tmp_path / "x.json"
    target.write_bytes(b"old")

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", boom)
    from ftcl_core.runs import RunFileError

    with pytest.raises(RunFileError, match="could not write .*x.json"):  # names the file; the OSError is its cause
        atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_augment_overrides_reach_the_pipeline():
    from ftcl_core.training import augment_config

    cfg = load_config("configs/cpu_moco_v2.yaml", ["augment.blur_sigma=[0.05, 0.5]", "augment.crop_scale=[0.3, 1.0]"])
    aug = augment_config(cfg)
    assert aug.blur_sigma == (0.05, 0.5) and aug.crop_scale == (0.3, 1.0) and aug.blur_p == 0.5
    assert augment_config(load_config("configs/cpu_moco_v2.yaml")).blur_sigma == (0.1, 2.0)
    assert augment_config(load_config("configs/cpu_moco_v1.yaml")).blur_p == 0.0


def test_stored_configs_without_a_newer_key_still_match():
    old = load_config(None).to_dict()
    del old["augment"]["blur_sigma"]
    assert config_diff(old, load_config(None)) == []


# ---- faults a user meets: one line that names the file or folder and the way out, no traceback ----

SMOKE = ["configs/smoke_moco_v2.yaml", "data.n_train=256", "moco.queue_size=128", "train.epochs=1", "eval.linear_epochs=1",
         "eval.random_init=false"]


def cli(capsys, *args: str) -> tuple[int, str]:
    from ftcl_core.__main__ import main

    code = main(["train", *args, "--no-progress"])
    err = capsys.readouterr().err.strip()
    return code, err


def assert_one_clear_line(code: int, err: str, *names: str) -> None:
    assert code == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in err, err
    for name in names:
        assert name in err, f"{name!r} not named in: {err}"


def test_disk_full_while_checkpointing_names_the_folder_and_says_resuming_is_safe(tmp_path, capsys, monkeypatch):
    import errno
    import os

    from ftcl_core import runs

    real_fsync = os.fsync

    def full(fd):
        if "checkpoint.pt" in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(runs.os, "fsync", full)
    code, err = cli(capsys, *SMOKE, "--out", str(tmp_path / "run"))
    assert_one_clear_line(code, err, str(tmp_path / "run"), "no space left", "same command")
    assert not (tmp_path / "run" / "checkpoint.pt").exists()
    assert not [p for p in (tmp_path / "run").iterdir() if p.name.endswith(".tmp")]  # no partial file left
    monkeypatch.setattr(runs.os, "fsync", real_fsync)
    code, err = cli(capsys, *SMOKE, "--out", str(tmp_path / "run"))  # space freed: the same command finishes
    assert code == 0 and (tmp_path / "run" / "eval.json").is_file()


def test_out_naming_a_file_is_one_clear_line(tmp_path, capsys):
    f = tmp_path / "notes.txt"
    f.write_text("mine")
    code, err = cli(capsys, *SMOKE, "--out", str(f))
    assert_one_clear_line(code, err, str(f), "is a file")
    assert f.read_text() == "mine"


def test_damaged_eval_json_and_config_yaml_name_the_file_and_the_recovery(tmp_path, capsys):
    run = tmp_path / "run"
    assert cli(capsys, *SMOKE, "--out", str(run))[0] == 0
    good_eval = (run / "eval.json").read_text()
    (run / "eval.json").write_text("{oops")
    code, err = cli(capsys, *SMOKE, "--out", str(run))
    assert_one_clear_line(code, err, str(run / "eval.json"), "Delete it")
    (run / "eval.json").unlink()  # the recovery the message gives: evaluated again from the final checkpoint
    assert cli(capsys, *SMOKE, "--out", str(run))[0] == 0
    assert set(json_keys(run / "eval.json")) >= set(json_keys_text(good_eval))
    (run / "config.yaml").write_text(":: not yaml [")
    code, err = cli(capsys, *SMOKE, "--out", str(run))
    assert_one_clear_line(code, err, str(run / "config.yaml"), "damaged")


def json_keys(path):
    import json

    return json.loads(path.read_text()).keys()


def json_keys_text(text):
    import json

    return json.loads(text).keys()


# ---- the typed config: frozen, built once, old keys mapped ----


def test_a_config_is_frozen_and_typed():
    import dataclasses

    cfg = load_config("configs/cpu_moco_v2.yaml")
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.train.epochs = 3
    assert isinstance(cfg.optim.lr, float) and isinstance(cfg.augment.crop_scale, tuple)
    again = cfg.updated({"train.epochs": 3})
    assert again.train.epochs == 3 and cfg.train.epochs == 30  # a new config; the old one is unchanged
    assert load_config(None, []).to_dict() == type(cfg).from_dict(load_config(None).to_dict()).to_dict()


def test_method_settings_live_with_their_method_and_old_keys_still_load():
    from ftcl_core.config import RunConfig

    simclr = load_config("configs/cpu_simclr.yaml")
    assert simclr.tau == simclr.simclr.tau == 0.2 and "moco" not in simclr.to_dict()
    old = {"method": "swav", "moco": {"tau": 0.3, "queue_size": 4096}}  # how runs before the method sections were stored
    assert RunConfig.from_dict(old).swav.tau == 0.3
    assert RunConfig.from_dict({"method": "byol", "moco": {"momentum": 0.996}}).byol.momentum == 0.996
    assert not config_diff(old, {"method": "swav", "swav": {"tau": 0.3}})
    assert config_diff(old, {"method": "swav", "swav": {"tau": 0.1}}) == ["swav.tau"]
    with pytest.raises(ConfigError, match="disagree"):
        RunConfig.from_dict({"method": "simclr", "moco": {"tau": 0.1}, "simclr": {"tau": 0.5}})
    with pytest.raises(ConfigError, match=r"simclr.tau=0.0 must be > 0"):
        load_config("configs/cpu_simclr.yaml", ["simclr.tau=0"])


def test_every_stored_run_config_loads_and_survives_a_round_trip():
    from pathlib import Path

    from ftcl_core.config import RunConfig
    from ftcl_core.runs import RunDir

    stored = sorted(Path("results").glob("**/config.yaml"))
    assert stored, "no stored runs found"
    for path in stored:
        cfg = RunDir(path.parent).load_config()
        assert RunConfig.from_dict(cfg.to_dict()) == cfg, path

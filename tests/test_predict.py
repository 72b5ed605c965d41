"""The FT-outcome predictor (ftcl_core.study.predict): its window, its models, its held-out protocol and intervals."""

import math

import numpy as np
import pytest

from ftcl_core.study import predict


def metrics(n=150, peak_at=None, level=0.95):
    neg = np.full(n, 0.1)
    if peak_at is not None:
        neg[peak_at:] = level
    return {"neg_mean": neg, "pos_mean": np.full(n, 0.9), "erank": np.linspace(80, 10, n), "rho": np.full(n, 0.2)}


def test_the_window_reads_the_steps_after_the_switch_and_the_rule_its_first_crossing():
    s = predict.window_stats(metrics(peak_at=30), switch=20)
    assert s.first_above == 10 and predict.rule_predicts_loss(s)  # 10 steps after the switch
    assert predict.window_stats(metrics(peak_at=45), switch=20).first_above == 25
    assert not predict.rule_predicts_loss(predict.window_stats(metrics(peak_at=45), switch=20))
    assert predict.window_stats(metrics(), switch=0).first_above is None
    feats = dict(zip(predict.FEATURES, s.features))
    assert feats["peak Mean(neg)"] == pytest.approx(0.95)
    erank = np.linspace(80, 10, 150)
    assert feats["effective rank, end / switch"] == pytest.approx(erank[110:120].mean() / erank[20])
    with pytest.raises(ValueError, match="runs past"):
        predict.window_stats(metrics(n=110), switch=20)


def test_wilson_interval_matches_a_hand_computation():
    lo, hi = predict.wilson(8, 10)
    z = 1.96
    p, n = 0.8, 10
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert (lo, hi) == pytest.approx((centre - half, centre + half))
    assert (lo, hi) == pytest.approx((0.4902, 0.9433), abs=1e-4)


def test_the_models_learn_a_separable_outcome_and_its_size():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(80, len(predict.FEATURES)))
    diff = -10 * x[:, 0] + rng.normal(scale=0.1, size=80)
    model = predict.fit(x, diff < 0, diff, l2=1e-3)
    p, size = model.predict(x)
    assert ((p >= 0.5) == (diff < 0)).mean() > 0.95
    assert np.abs(size - diff).mean() < 0.5
    assert model.sign_weights[1] > 0 and model.size_weights[1] < 0  # loses more as feature 0 grows


def test_held_out_by_experiment_never_fits_on_the_experiment_it_predicts(monkeypatch):
    def example(exp, i, loses):
        stats = predict.WindowStats(np.array([float(loses), i, 0, 0, 0, 0]), 5 if loses else None)
        return predict.Example(exp, "+both", i, "shapes", stats, -5.0 if loses else 1.0)

    examples = [example(e, i, loses=(i % 2 == 0)) for e in "ABC" for i in range(6)]
    seen = []
    real_fit = predict.fit

    def spy(x, loses, diff, **kw):
        seen.append(len(x))
        return real_fit(x, loses, diff, **kw)

    monkeypatch.setattr(predict, "fit", spy)
    res = predict.leave_one_experiment_out(examples)
    assert seen[:3] == [12, 12, 12]  # each fold: the other two experiments' 12 runs
    predictor, majority, rule = res["all"]
    assert predictor.n == 18 and predictor.correct == 18  # feature 0 is the outcome
    assert rule.correct == 18 and majority.correct == 9


def test_a_screen_prints_the_predicted_outcome_once_it_has_a_window():
    from ftcl_core.config import load_config
    from ftcl_core.study.cli import _screen_prediction

    cfg = load_config("configs/cpu_cal_moco_v1.yaml", ["ft.pos=true", "ft.neg=true"])
    m = {**metrics(n=120, peak_at=17), "epoch": np.zeros(120)}
    assert "P(loses readout)" in _screen_prediction(cfg, m) and "rule says it loses" in _screen_prediction(cfg, m)
    short = {k: v[:60] for k, v in m.items()}
    assert "needs --steps 100" in _screen_prediction(cfg, short)
    assert "no FT" in _screen_prediction(load_config("configs/cpu_cal_moco_v1.yaml"), m)


def test_the_predictor_checks_flip_with_the_held_out_outcomes():
    """Chapter 7's words on the predictor: it beats the majority outcome (McNemar p < 0.05), and the Mean(neg) rule
    misses runs that lose; each check fails when the held-out outcomes say otherwise."""
    from ftcl_core.study.checks import failures

    def score(correct, n=20):
        return {"correct": correct, "n": n, "accuracy": correct / n, "ci95": [0.1, 0.9], "mae": 5.0, "mae_ci95": [4.0, 6.0]}

    def report(model_right, rule_flags_all):
        # 20 runs, 10 lose; the majority guesses "loses" every time (right on 10); the model is right on model_right
        ex = [{"diff": -1.0 if i < 10 else 1.0, "majority_held_out": True, "rule": i < (10 if rule_flags_all else 5),
               "p_loss_held_out": 0.0 if 10 <= i < model_right else 1.0, "experiment": "E", "setting": f"s{i}"}
              for i in range(20)]
        return {"examples": ex, "rule": {"threshold": 0.9, "steps": 20},
                "scores": {"all": [score(model_right), score(10), score(15)],
                           "fashion_mnist": [score(5, 10), score(5, 10)], "shapes": [score(5, 10), score(5, 10)]}}

    claims = ("the model beats the majority outcome", "the rule misses runs that lose", "the data sets are as written")
    better = predict.report_facts(report(20, rule_flags_all=False))  # right on every run: McNemar p < 0.05
    assert better["beats"] == 1 and not failures(predict.CHECKS, better, *claims)
    close = predict.report_facts(report(11, rule_flags_all=True))
    assert (close["model_right"], close["majority_right"], close["data_0"]) == ("11", "10", "fashion_mnist")
    assert close["beats"] == 0 and list(failures(predict.CHECKS, close, *claims)) == list(claims[:2])


def test_the_gain_over_the_majority_is_judged_over_settings_not_runs():
    """Runs of one setting are not independent: a gain that sits in one setting's many seeds is not decided over
    settings, however many runs it holds; one spread over many settings is."""
    from ftcl_core.study.checks import failures

    def example(setting, model_right):  # FT gains in the run; the majority says "loses" (wrong); the model as told
        return {"experiment": "E", "setting": setting, "diff": 1.0, "majority_held_out": True,
                "p_loss_held_out": 0.0 if model_right else 1.0}

    one = {"examples": [example("s0", True) for _ in range(30)] + [example(f"t{i}", False) for i in range(20)]}
    f = predict.setting_level(one)  # 30 runs better, all of one setting; 20 settings where both are wrong
    assert f["gain_decided"] == 0 and (f["better"], f["worse"], f["settings"]) == ("1", "0", "21")
    spread = {"examples": [example(f"s{i}", True) for i in range(40)]}
    g = predict.setting_level(spread)
    assert g["gain_decided"] == 1 and g["better"] == "40" and float(g["sign_p"]) < 0.001
    name = "the model's gain is not decided at the level of settings"
    assert failures(predict.CHECKS, {"gain_decided": 1, "gain_lo": "+1", "gain_hi": "+9"}, name)
    assert not failures(predict.CHECKS, {"gain_decided": 0, "gain_lo": "-1", "gain_hi": "+9"}, name)

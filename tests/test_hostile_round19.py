"""Issue 64, the fourteenth trial's low items left at a678a81: a damaged IDX header called a truncated file, a plan
of a calibrated rerun on a profile whose sweep refuses it, and an unfinished run whose checkpoint is gone trained again
from its first step without a word.  Each fails at a678a81."""

from __future__ import annotations

import gzip

import pytest
from test_hostile_inputs import assert_one_line, cli, own_registry  # noqa: F401  (own_registry: autouse)

from ftcl_core.__main__ import EXIT_ERROR, train_banner
from ftcl_core.study.fashion_mnist import read_idx


def idx(dims: bytes, body: bytes) -> bytes:
    return bytes([0, 0, 8, len(dims) // 4]) + dims + body


@pytest.mark.parametrize("header, body, word", [
    ((3).to_bytes(4, "big") + (1 << 20).to_bytes(4, "big"), bytes(3 * 4), "header is damaged"),  # a dimension's byte flipped
    ((3).to_bytes(4, "big") + (4).to_bytes(4, "big"), bytes(12 + 5), "damaged header"),  # more bytes than the header says
    ((3).to_bytes(4, "big") + (4).to_bytes(4, "big"), bytes(5), "cut short"),
])
def test_a_damaged_idx_header_is_not_called_only_truncated(tmp_path, header, body, word):
    path = tmp_path / "train-images-idx3-ubyte.gz"
    path.write_bytes(gzip.compress(idx(header, body)))
    with pytest.raises(ValueError, match=word):
        read_idx(path)


def test_a_calibrated_plan_is_refused_where_its_sweep_is(capsys):
    code, err = cli(capsys, "plan", "--calibrated", "--profile", "smoke")
    assert_one_line(code, err, EXIT_ERROR, "calibrated", "'smoke'")


def test_an_unfinished_run_without_its_checkpoint_says_its_log_is_replaced(tmp_path):
    plain = train_banner("configs/smoke.yaml", [], tmp_path / "new")
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "config.yaml").write_text("seed: 0\n")
    (folder / "metrics.npz").write_bytes(b"")
    again = train_banner("configs/smoke.yaml", [], folder)
    assert "metrics.npz" in again and "metrics.npz" not in plain  # the log it replaces, named

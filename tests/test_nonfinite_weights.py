"""Issue 54 item 4: a network with a NaN or an infinite weight is refused in one line
wherever it is loaded (an SB3 .zip by evaluate, train --init-from and export; an
exported .onnx; a snapshot's plain weights), before any game starts. Before, only value
nets were refused: the others played until a game raised IllegalMoveError."""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from benchmarks import hostile
from benchmarks.hostile import nan_raw_initializer
from fivethousand_rl import evaluate, export, train
from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.base import check_finite
from fivethousand_rl.agents.exported import ExportError, check_onnx_weights
from fivethousand_rl.agents.neural import CheckpointError, NumpyScorer, check_weights, load_snapshot
from tests.helpers import tiny_mlp_model

ROOT = Path(__file__).resolve().parent.parent
SHIPPED_ONNX = hostile.SHIPPED_ONNX
MESSAGE = "are not all finite numbers"


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err, err
    return err


@pytest.fixture(scope="module")
def tiny_model():
    return tiny_mlp_model(hidden=8, n_steps=64)


@pytest.fixture(params=[np.nan, np.inf])
def bad_zip(request, tiny_model, tmp_path) -> Path:
    """The tiny model saved with one weight NaN (or inf)."""
    import torch

    weight = next(tiny_model.policy.parameters())
    kept = weight.data[0, 0].item()
    with torch.no_grad():
        weight[0, 0] = request.param
    try:
        tiny_model.save(tmp_path / "bad.zip")
    finally:
        with torch.no_grad():
            weight[0, 0] = kept
    return tmp_path / "bad.zip"


def test_check_finite_names_what_is_not_finite():
    check_finite("weights", np.ones(3, np.float32))
    check_finite("weights", np.arange(3))  # integers are always finite
    for bad in (np.nan, np.inf, -np.inf):
        with pytest.raises(
            ValueError, match=r"^its weights \(w\) are not all finite numbers \(NaN or inf\)$"
        ):
            check_finite("weights (w)", np.array([0.0, bad], np.float16))


def test_an_sb3_zip_with_a_non_finite_weight_is_refused_by_evaluate(bad_zip, capsys):
    with pytest.raises(ValueError, match=MESSAGE):
        make_policy(str(bad_zip))
    assert evaluate.main([str(bad_zip), "random", "--games", "2"]) == 2
    assert "policy.pth weights (" in one_line_error(capsys)


def test_an_sb3_zip_with_a_non_finite_weight_is_refused_by_export(bad_zip, capsys):
    out = bad_zip.with_name("out.onnx")
    assert export.main([str(bad_zip), "-o", str(out)]) == 2
    assert MESSAGE in one_line_error(capsys)
    assert not out.exists() and not out.with_suffix(".json").exists()


def test_an_sb3_zip_with_a_non_finite_weight_is_refused_by_train_init_from(
    bad_zip, tmp_path, capsys
):
    runs = tmp_path / "runs"
    argv = ["--preset", "quick", "--no-progress", "--n-timesteps", "256", "--params"]
    argv += ["n_envs=2", "n_steps=128", "batch_size=128", "eval_freq=0", "checkpoint_freq=256"]
    argv += ["--init-from", str(bad_zip), "--checkpoints", str(runs)]
    assert train.main(argv) == 2
    assert MESSAGE in one_line_error(capsys)


def test_non_finite_optimizer_moments_are_refused_too(tiny_model, tmp_path):
    """Training from a checkpoint whose Adam moments are NaN diverges at the first step."""
    import torch

    tiny_model.save(tmp_path / "good.zip")
    raw = io.BytesIO()
    with zipfile.ZipFile(tmp_path / "good.zip") as src, zipfile.ZipFile(raw, "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            if name == "policy.optimizer.pth":
                state = {"state": {0: {"exp_avg": torch.tensor([float("inf")])}}}
                buffer = io.BytesIO()
                torch.save(state, buffer)
                data = buffer.getvalue()
            dst.writestr(name, data)
    with zipfile.ZipFile(tmp_path / "good.zip") as archive:
        check_weights(archive)  # the untouched checkpoint passes
    moments = r"policy.optimizer.pth weights \(state.0.exp_avg\)"
    with zipfile.ZipFile(raw) as archive, pytest.raises(ValueError, match=moments):
        check_weights(archive)


def test_a_snapshot_with_a_non_finite_weight_is_refused(tmp_path):
    """A self-play snapshot (plain weights in an .npz), as training writes one."""
    from fivethousand_rl.agents.neural import SB3Policy

    shipped = SB3Policy(ROOT / "checkpoints" / "ppo-2p" / "model.zip")
    scorer = NumpyScorer.from_policy(shipped.model.policy, spec=shipped.spec)
    key = next(iter(scorer.weights))
    scorer.weights[key].flat[0] = np.nan
    path = tmp_path / "snapshot.npz"
    scorer.save(path)
    with pytest.raises(ValueError, match=rf"weights \({key}\) {MESSAGE}"):
        NumpyScorer.load(path)
    with pytest.raises(CheckpointError, match=MESSAGE):
        load_snapshot(path)


# ------------------------------------------------------------------------ exported ONNX
def nan_onnx(tmp_path: Path, edit) -> Path:
    """The shipped ppo-2p's .onnx and metadata, copied, with `edit(model)` applied."""
    pytest.importorskip("onnx")
    return hostile.nan_onnx(tmp_path, edit)


def inf_listed_initializer(model) -> None:
    """The values in float_data, not raw_data: the other way a TensorProto holds floats."""
    from onnx import helper, numpy_helper

    last = [t for t in model.graph.initializer if t.data_type == 1][-1]
    values = numpy_helper.to_array(last).astype(np.float32).copy()
    values.flat[-1] = -np.inf
    tensor = helper.make_tensor(last.name, 1, values.shape, values.ravel().tolist())
    assert not tensor.raw_data and tensor.float_data
    last.CopyFrom(tensor)


def nan_constant_node(model) -> None:
    """A NaN in a Constant node's tensor, not an initializer; unused, yet refused."""
    from onnx import helper, numpy_helper

    constant = numpy_helper.from_array(np.array([1.0, np.nan], np.float32), "c")
    model.graph.node.insert(0, helper.make_node("Constant", [], ["unused_c"], value=constant))


@pytest.mark.parametrize("edit", [nan_raw_initializer, inf_listed_initializer, nan_constant_node])
def test_an_exported_bot_with_a_non_finite_weight_is_refused(edit, tmp_path, capsys):
    path = nan_onnx(tmp_path, edit)
    with pytest.raises(ExportError, match=MESSAGE):
        make_policy(str(path))
    assert evaluate.main([str(path), "random", "--games", "2"]) == 2
    assert MESSAGE in one_line_error(capsys)


def test_the_shipped_exported_bots_pass_and_a_broken_file_is_refused(tmp_path):
    for path in (ROOT / "checkpoints").glob("*/*.onnx"):
        check_onnx_weights(path)
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(SHIPPED_ONNX.read_bytes()[:5000])
    with pytest.raises(ValueError, match="not an ONNX model"):
        check_onnx_weights(cut)


# ------------------------------------------------------------------------- the web server
def test_the_server_leaves_out_an_exported_bot_with_non_finite_weights(tmp_path, caplog):
    """Issue 54: a NaN .onnx in the server's bots/ answered 500 at every step of its
    games. Now it is left out of the list at start-up, in one line of the log."""
    pytest.importorskip("fastapi", reason="the web app needs fastapi (dev extras)")
    from fastapi.testclient import TestClient

    from fivethousand_rl.webplay.app import create_app
    from fivethousand_rl.webplay.bots import Catalogue

    bad = nan_onnx(tmp_path, nan_raw_initializer)
    bots = tmp_path / "server" / "bots"
    bots.mkdir(parents=True)
    for path in (bad, bad.with_suffix(".json")):
        shutil.copy(path, bots / path.name)
    shutil.copy(SHIPPED_ONNX, bots / "good.onnx")
    shutil.copy(SHIPPED_ONNX.with_suffix(".json"), bots / "good.json")
    with caplog.at_level("WARNING", logger="webplay"):
        catalogue = Catalogue(tmp_path / "server")
    assert "good.onnx" in catalogue and "bad.onnx" not in catalogue
    [record] = [r for r in caplog.records if "left out" in r.getMessage()]
    assert "bad.onnx" in record.getMessage() and MESSAGE in record.getMessage()
    client = TestClient(
        create_app(tmp_path / "data", catalogue=catalogue), base_url="http://localhost"
    )
    keys = [b["key"] for b in client.get("/api/bots").json()["bots"]]
    assert "good.onnx" in keys and "bad.onnx" not in keys
    client.app.state.store.close()

"""The ensemble of paper-recipe networks (issue 23): names, precise accuracies, commits and resumable state."""

import dataclasses
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from attention_paths.base import provenance
from attention_paths.tasks.omniglot import checkpoints, recipe
from attention_paths.tasks.omniglot import members as en
from attention_paths.tasks.omniglot import training as tr
from attention_paths.tasks.omniglot.episodes import Episodes

ROOT = Path(__file__).resolve().parents[3]


def test_network_names_map_to_the_paper_recipe_with_their_seed():
    assert recipe.network_config("paper") == recipe.TrainConfig()
    assert recipe.network_config("quick") == recipe.TRAIN_CONFIGS["quick"]
    cfg = recipe.network_config("paper-seed3")
    assert cfg.seed == 3 and cfg.steps == 41_240 and cfg == recipe.TrainConfig(seed=3)
    for name in ("paper", "quick", "paper-seed3", "paper-2x8", "paper-3x3"):
        assert recipe.network_name(recipe.network_config(name)) == name
    # the reference's other architectures: the paper's recipe with layers, heads and G changed
    # (train_2lay_h8_g64_n512.sh, train_3lay_h3_g170_n512.sh, whose --qk_dim_head is 128)
    assert recipe.network_config("paper-2x8") == recipe.TrainConfig(n_layers=2, n_heads=8, d_qk=64)
    assert recipe.network_config("paper-3x3") == recipe.TrainConfig(n_layers=3, n_heads=3, d_qk=128)
    assert [en.member_name(k) for k in en.ENSEMBLE_SEEDS] == [
        "paper",
        "paper-seed1",
        "paper-seed2",
        "paper-seed3",
        "paper-seed4",
    ]
    assert recipe.config_for("paper-seed2", test_episodes=7).seed == 2
    # names are registry keys, never parsed: what is not registered is unknown, and the message says which are
    for bad in ("paper-seed42", "paper-seed01", "paper-seed-1", "seed1", "Paper", "paper-seed7", "quick-bf16"):
        with pytest.raises(ValueError, match=f"unknown network '{bad}'.*seed 42 is the network named 'paper'"):
            recipe.network_config(bad)
    with pytest.raises(TypeError):
        recipe.network_config(1)
    with pytest.raises(ValueError, match="no registered network"):
        recipe.network_name(recipe.TrainConfig(lr=1e-3))
    for bad in (-1, 1.5, True, "1"):
        with pytest.raises(ValueError, match="non-negative integer"):
            en.member_name(bad)


def test_a_network_is_one_registry_entry_with_its_seed_as_a_field(monkeypatch):
    """Registering a network is one call; its seed is the configuration's field, whatever its name says; the
    folder is spelled by network_dir alone; a second name for one network, or a name re-registered, is refused."""
    monkeypatch.setattr(recipe, "NETWORKS", dict(recipe.NETWORKS))
    cfg = dataclasses.replace(recipe.network_config("paper-2x8"), seed=1)
    net = recipe.register_network("wide-one", cfg)
    assert (net.name, net.config.seed, net.precision) == ("wide-one", 1, "auto")
    assert recipe.network_config("wide-one") is cfg and recipe.network_name(cfg) == "wide-one"
    assert recipe.network_dir("wide-one", "/d") == Path("/d/omniglot-wide-one")
    assert recipe.network_dir("paper").parent.name == "data"
    with pytest.raises(ValueError, match="same network as 'wide-one'"):
        recipe.register_network("wide-one-again", cfg)
    with pytest.raises(ValueError, match="already registered with other settings"):
        recipe.register_network("wide-one", recipe.network_config("paper"), "bfloat16")
    with pytest.raises(ValueError, match="unknown network 'nowhere'"):
        recipe.network_dir("nowhere")
    with pytest.raises(ValueError, match="lower-case"):
        recipe.register_network("Bad Name", cfg)
    with pytest.raises(ValueError, match="precision must be one of"):
        recipe.register_network("half", cfg, "float8")
    # a new ensemble seed is registered on first use as the paper recipe with that seed
    assert en.member_name(5) == "paper-seed5" and recipe.network_config("paper-seed5").seed == 5
    assert en.member_name(42) == "paper"  # seed 42's network is the registry's "paper", found, not special-cased


def test_a_bfloat16_network_is_registered_with_its_precision():
    assert recipe.network_config("paper-bf16") == recipe.network_config("paper")
    assert [recipe.network_precision(n) for n in ("paper", "paper-seed3", "quick", "paper-bf16", "paper-2x8")] == [
        "auto",
        "auto",
        "auto",
        "bfloat16",
        "auto",
    ]
    assert recipe.network_name(recipe.TrainConfig(), "bfloat16") == "paper-bf16"
    for bad in ("paper-bf16-bf16", "paper-seed3-bf16", "bf16", "-bf16", "paper-fp16"):
        with pytest.raises(ValueError, match="unknown network"):
            recipe.network_precision(bad)


def _copy_network(src: str, tmp_path, dst: str | None = None) -> Path:
    """A copy of the committed network folder ``data/omniglot-<src>`` as ``tmp_path/omniglot-<dst>``."""
    folder = tmp_path / f"omniglot-{dst or src}"
    shutil.copytree(ROOT / "data" / f"omniglot-{src}", folder)
    return folder


def _edit_record(folder: Path, reseal: bool = True, **changes) -> None:
    """Rewrite ``record.json`` with ``changes`` (and, with ``reseal``, its seal with it, as a forger would)."""
    rec = json.loads((folder / "record.json").read_text())
    (folder / "record.json").write_text(json.dumps({**rec, **changes}))
    if reseal:
        checkpoints.seal_network_folder(folder)


def test_a_network_folder_must_have_the_precision_its_registry_entry_says(tmp_path):
    """The float32 paper network's files under the name of the bfloat16 control are refused, and a record
    that claims bfloat16 under a float32 name too (each rewritten with its seal: the content check tells)."""
    _copy_network("paper", tmp_path, "paper-bf16")
    with pytest.raises(ValueError, match="trained in float32; the registry says bfloat16"):
        checkpoints.committed_checkpoint("paper-bf16", tmp_path)
    folder = _copy_network("quick", tmp_path)
    rec = json.loads((folder / "record.json").read_text())
    assert checkpoints.committed_checkpoint("quick", tmp_path)[1]["exported"] == rec["exported"]
    _edit_record(folder, precision="bfloat16")
    with pytest.raises(ValueError, match="trained in bfloat16; the registry says auto"):
        checkpoints.committed_checkpoint("quick", tmp_path)


def test_a_network_folder_must_hold_the_network_it_is_named_after(tmp_path):
    """The quick network's files placed under data/omniglot-paper do not load as the paper network."""
    fake = _copy_network("quick", tmp_path, "paper")
    with pytest.raises(ValueError, match="named network 'paper'.*another configuration"):
        tr.load_network("paper", train_if_missing=False, data_dir=tmp_path)
    # a record that claims the paper recipe over a model trained otherwise is refused too
    _edit_record(fake, config=json.loads((ROOT / "data" / "omniglot-paper" / "record.json").read_text())["config"])
    with pytest.raises(ValueError, match="other settings than its record.json"):
        tr.load_network("paper", train_if_missing=False, data_dir=tmp_path)


class _Sign(torch.nn.Module):
    """A stand-in network whose output is a fixed vector, to check the accuracy and its error."""

    def __init__(self, outputs):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.out = torch.as_tensor(outputs, dtype=torch.float32)
        self.i = 0

    def tokens(self, batch):
        return torch.zeros(len(batch[1]), 1)

    def path_forward(self, x0):
        o = self.out[self.i : self.i + len(x0)]
        self.i += len(x0)
        return o


def test_precise_accuracy_has_the_binomial_standard_error():
    n = 1000
    y = np.where(np.arange(n) % 2, 1.0, -1.0).astype(np.float32)
    out = y.copy()
    out[:130] *= -1  # 130 wrong
    out[130] = 0.0  # an output of exactly 0 counts as -1: right when y = -1 (episode 130 is even)
    eps = Episodes(np.zeros((n, 1)), np.zeros((n, 3), int), y, np.zeros((n, 2), int), np.zeros(n, int))
    acc = en.precise_accuracies(_Sign(out), {"test": eps})["test"]
    assert acc["episodes"] == n and acc["accuracy"] == pytest.approx(87.0)
    assert acc["se"] == pytest.approx(100 * math.sqrt(0.87 * 0.13 / n))


def test_commit_refuses_an_unfinished_run_and_resume_from_continues_it(tmp_path):
    """An unfinished run cannot be committed; its last.pt, copied elsewhere, resumes the run to the same weights
    as an uninterrupted one."""
    if not (Path(tr.config.data_root()) / "omniglot-py").exists():
        pytest.skip("Omniglot not available offline")
    cfg = recipe.TrainConfig(
        d_model=32, d_qk=8, steps=40, eval_every=20, val_episodes=64, test_episodes=64, ood_episodes=20
    )
    whole = tr.train(cfg, tmp_path / "whole", progress=False)
    tr.train(cfg, tmp_path / "part", progress=False, max_steps=20)
    with pytest.raises(ValueError, match="unfinished run"):
        en.commit_network(tmp_path / "part", tmp_path / "data" / "omniglot-x")
    shutil.copyfile(tmp_path / "part" / "last.pt", tmp_path / "resume.pt")
    resumed = tr.train(cfg, tmp_path / "elsewhere", progress=False, resume_from=tmp_path / "resume.pt")
    assert resumed["finished"] and [r["step"] for r in resumed["history"]] == [20, 40]
    a, _ = checkpoints.load_trained(tmp_path / "whole" / "last.pt")
    b, _ = checkpoints.load_trained(tmp_path / "elsewhere" / "last.pt")
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-6)
    assert resumed["history"][-1]["val"] == pytest.approx(whole["history"][-1]["val"], abs=1e-4)
    # a run resumed in another session may have lost its best-validation weights: committed without them
    (tmp_path / "elsewhere" / "best.pt").unlink(missing_ok=True)
    rec = en.commit_network(
        tmp_path / "elsewhere", tmp_path / "data" / "omniglot-x", test_episodes=64, allow_dirty=True
    )
    assert rec["evaluation"]["provenance"]["git_dirty"] is bool(provenance.code_changes())  # diff kept if dirty
    assert rec["accuracies"]["test"]["episodes"] == 64 and rec["accuracies"]["MNIST"]["episodes"] == 2115
    assert "test" not in rec["accuracies_best"] and "not kept" in rec["accuracies_best"]["note"]
    assert rec["accuracies_best"]["step"] == resumed["best_validation"]["step"]
    # the committed folder is sealed with the record as finally written (issue 37 §1)
    seal = checkpoints.verify_network_folder(tmp_path / "data" / "omniglot-x")
    assert seal["files_sha256"]["record.json"] == checkpoints.checkpoint_sha256(
        tmp_path / "data" / "omniglot-x" / "record.json"
    )
    with pytest.raises(FileNotFoundError, match="does not exist"):
        tr.train(cfg, tmp_path / "new", progress=False, resume_from=tmp_path / "missing.pt")
    with pytest.raises(ValueError, match="threads"):
        tr.train(cfg, tmp_path / "new", progress=False, threads=0)


def test_committed_paper_network_has_precise_accuracies():
    """Issue 23, part 1: at least 20,000 meta-test episodes (standard error <= 0.3 points) and the complete
    out-of-distribution sets, beside the training run's own 2,048-episode numbers."""
    rec = json.loads((ROOT / "data" / "omniglot-paper" / "record.json").read_text())
    acc = rec["accuracies"]
    assert acc["test"]["episodes"] >= 20_000 and acc["test"]["se"] <= 0.3
    assert acc["MNIST"]["episodes"] == 2115 and acc["FashionMNIST"]["episodes"] == 2000
    p = acc["test"]["accuracy"] / 100
    assert acc["test"]["se"] == pytest.approx(100 * math.sqrt(p * (1 - p) / acc["test"]["episodes"]))
    assert rec["accuracies_training"]["test"]["episodes"] == 2048
    # the training run's last evaluation of the OOD sets used the same complete sets: the same numbers
    for s in ("MNIST", "FashionMNIST"):
        assert acc[s]["accuracy"] == pytest.approx(rec["accuracies_training"][s]["accuracy"], abs=1e-9)
    assert abs(acc["test"]["accuracy"] - rec["accuracies_training"]["test"]["accuracy"]) < 3 * 0.9
    assert en.committed_members()[0] == (42, "paper")


def test_checkpoints_without_a_digest_are_refused_unless_asked(tmp_path):
    """Issue 24, group 2: a same-size damaged checkpoint without a digest would load; it is refused by name,
    and loads only with verify=False, with a warning.  The committed checkpoints carry digests."""
    for name in ("quick", "paper"):
        ck = torch.load(ROOT / "data" / f"omniglot-{name}" / "model.pt", weights_only=False)
        assert "digest" in ck, name
    ck.pop("digest")
    ck["model"]["w_in.weight"][0, 0] = 1e37
    torch.save(ck, tmp_path / "plain.pt")
    with pytest.raises(ValueError, match="plain.pt carries no digest"):
        checkpoints.load_trained(tmp_path / "plain.pt")
    with pytest.warns(UserWarning, match="without verifying"):
        net, _ = checkpoints.load_trained(tmp_path / "plain.pt", verify=False)
    assert float(net.w_in.weight[0, 0].detach()) == pytest.approx(1e37)


def test_a_non_finite_loss_stops_training_and_writes_nothing(tmp_path):
    """Issue 24, group 2: weights scaled by 1e30 (with a valid digest) give an infinite loss on resume; the run
    stops with an error naming the step, and its checkpoints and summary are left as they were."""
    if not (Path(tr.config.data_root()) / "omniglot-py").exists():
        pytest.skip("Omniglot not available offline")
    cfg = recipe.TrainConfig(
        d_model=32, d_qk=8, steps=40, eval_every=20, val_episodes=64, test_episodes=64, ood_episodes=20
    )
    tr.train(cfg, tmp_path, progress=False, max_steps=20)
    ck = torch.load(tmp_path / "last.pt", weights_only=False)
    ck.pop("digest")
    for v in ck["model"].values():
        if v.is_floating_point():
            v.mul_(1e30)
    checkpoints._atomic_torch_save(ck, tmp_path / "last.pt")
    before = {f: (tmp_path / f).read_bytes() for f in ("last.pt", "best.pt", "summary.json")}
    with pytest.raises(FloatingPointError, match=r"training loss is (inf|nan) at step 21"):
        tr.train(cfg, tmp_path, progress=False)
    assert before == {f: (tmp_path / f).read_bytes() for f in ("last.pt", "best.pt", "summary.json")}

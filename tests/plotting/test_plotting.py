"""Shared figure style and on-demand PDF/SVG export (attention_paths.plotting)."""

import xml.etree.ElementTree as ET

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from attention_paths import plotting  # noqa: E402


@pytest.fixture
def fig():
    f, ax = plt.subplots(figsize=plotting.figsize(2, aspect=0.5))
    ax.plot([0, 1], [0, 1], label="line")
    ax.set_title("title")
    yield f
    plt.close(f)


def test_export_writes_pdf_and_svg(fig, tmp_path, monkeypatch):
    out = tmp_path / "figs"  # created on demand
    monkeypatch.setenv("REPRO_FIGURES", str(out))
    size = tuple(fig.get_size_inches())
    paths = plotting.export(fig, "fig-test")
    assert sorted(p.name for p in paths) == ["fig-test.pdf", "fig-test.svg"]
    assert sorted(p.name for p in out.iterdir()) == ["fig-test.pdf", "fig-test.svg"]  # no temporary left
    assert (out / "fig-test.pdf").read_bytes().startswith(b"%PDF")
    root = ET.parse(out / "fig-test.svg").getroot()
    assert root.tag.rsplit("}", 1)[-1] == "svg"
    # the figure is neither closed nor changed
    assert plt.fignum_exists(fig.number)
    assert tuple(fig.get_size_inches()) == size
    # a second export overwrites in place
    assert plotting.export(fig, "fig-test") == paths
    assert len(list(out.iterdir())) == 2


def test_export_is_a_noop_when_unset(fig, tmp_path, monkeypatch):
    monkeypatch.delenv("REPRO_FIGURES", raising=False)
    monkeypatch.chdir(tmp_path)
    assert plotting.export(fig, "fig-test") == []
    monkeypatch.setenv("REPRO_FIGURES", "")
    assert plotting.export(fig, "fig-test") == []
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["", "   ", "a/b", "../fig", "a\\b", ".", "..", None, 3])
def test_export_rejects_bad_names(fig, tmp_path, monkeypatch, name):
    monkeypatch.setenv("REPRO_FIGURES", str(tmp_path))
    with pytest.raises(ValueError, match="figure name"):
        plotting.export(fig, name)
    monkeypatch.delenv("REPRO_FIGURES")
    with pytest.raises(ValueError, match="figure name"):  # checked also when exporting is off
        plotting.export(fig, name)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("failing", ["pdf", "svg"])
def test_failing_save_leaves_nothing(fig, tmp_path, monkeypatch, failing):
    monkeypatch.setenv("REPRO_FIGURES", str(tmp_path))
    real_savefig = fig.savefig

    def savefig(fh, format, **kw):
        if format == failing:
            fh.write(b"%PDF-1.4 partial")
            fh.flush()
            raise RuntimeError("disk full")
        return real_savefig(fh, format=format, **kw)

    monkeypatch.setattr(fig, "savefig", savefig)
    with pytest.raises(RuntimeError, match="disk full"):
        plotting.export(fig, "fig-broken")
    assert list(tmp_path.iterdir()) == []  # neither final names nor temporaries


@pytest.fixture
def restore_rc():
    with matplotlib.rc_context():  # the style must not leak into other tests
        yield


def test_use_style_is_idempotent(restore_rc):
    assert plotting.use_style() is None
    first = dict(matplotlib.rcParams)
    plotting.use_style()
    assert dict(matplotlib.rcParams) == first
    rc = matplotlib.rcParams
    assert rc["figure.dpi"] == 110
    assert rc["font.size"] == 9
    assert not rc["axes.spines.top"] and not rc["axes.spines.right"]
    assert rc["savefig.bbox"] == "tight"
    assert rc["svg.fonttype"] == "none"
    assert rc["pdf.fonttype"] == 42
    assert rc["axes.prop_cycle"].by_key()["color"] == list(plotting.PALETTE)


def test_heatmap_U_symmetric_limits():
    U = np.array([[1.0, -0.3], [-0.3, 0.5]])
    f, (a1, a2) = plt.subplots(1, 2)
    try:
        im = plotting.heatmap_U(a1, U, ["a", "b"])
        assert im.get_clim() == (-1.0, 1.0)
        assert im.get_cmap().name == plotting.DIVERGING
        im = plotting.heatmap_U(a2, -2 * U, vmax=3.0)
        assert im.get_clim() == (-3.0, 3.0)
        im = plotting.kernel_image(a2, U)
        assert im.get_clim() == (-1.0, 1.0)
    finally:
        plt.close(f)


def test_figsize():
    assert plotting.figsize(2, aspect=0.5) == (plotting.WIDTH_FULL, plotting.WIDTH_FULL / 4)
    assert plotting.figsize(1, width=plotting.WIDTH_HALF) == (plotting.WIDTH_HALF, 0.75 * plotting.WIDTH_HALF)
    with pytest.raises(ValueError):
        plotting.figsize(0)


def test_export_is_quiet_and_readable(fig, tmp_path, monkeypatch, capfd, caplog):
    import os
    import stat

    monkeypatch.setenv("REPRO_FIGURES", str(tmp_path))
    fig.axes[0].set_xlabel(r"$\max_{\pi\pi'}|U^*_{\pi\pi'}-\delta_{\pi\pi'}| \propto 1/N$")  # mathtext fonts
    old = os.umask(0o022)
    try:
        with matplotlib.rc_context():
            plotting.use_style()  # pdf.fonttype 42: fonts subset by fontTools
            for p in plotting.export(fig, "fig-quiet"):
                assert stat.S_IMODE(p.stat().st_mode) == 0o644
    finally:
        os.umask(old)
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    assert not [r for r in caplog.records if r.name.startswith("fontTools")]


def test_accuracy_grid_heatmap_orientation_and_marks():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    acc = np.array([[50.0, 60.0, 70.0], [55.0, 65.0, 75.0]])  # [tau, width]
    fig, ax = plt.subplots()
    mesh = plotting.accuracy_grid_image(ax, acc, [10, 100, 1000], [0.1, 0.5], mark=[(0, 2)])
    assert mesh.get_array().size == acc.size
    # the lowest temperature is the bottom row: its cell texts, read left to right, are acc[0]
    texts = {(round(t.get_position()[0], 1), round(t.get_position()[1], 1)): t.get_text() for t in ax.texts}
    assert [texts[(x + 0.5, 1.5)] for x in range(3)] == ["50", "60", "70"]
    assert [label.get_text() for label in ax.get_yticklabels()] == ["0.5", "0.1"]  # top to bottom
    rects = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_edgecolor()[:3] == (1.0, 0.0, 0.0)]
    assert len(rects) == 1 and rects[0].get_xy() == (2, 1)  # tau 0.1 (bottom row), width 1000
    plt.close(fig)


def test_the_palettes_colour_names_match_their_hues():
    """Issue 26: captions name the palette's colours by plotting.COLOR_NAMES; the names match the hues (C3,
    seaborn's #d55e00, is vermilion between red and orange, C1 orange)."""
    import colorsys

    from matplotlib.colors import to_rgb

    assert len(plotting.COLOR_NAMES) == len(plotting.PALETTE) == 10
    hue = {
        name: 360 * colorsys.rgb_to_hsv(*to_rgb(c))[0]
        for name, c in zip(plotting.COLOR_NAMES, plotting.PALETTE, strict=True)
    }
    assert 15 < hue["vermilion"] < 30 < hue["orange"] < 45
    assert 190 < hue["blue"] < 215 and 150 < hue["green"] < 175
    sat = colorsys.rgb_to_hsv(*to_rgb(plotting.PALETTE[plotting.COLOR_NAMES.index("grey")]))[1]
    assert sat < 0.05


def test_wide_grids_get_short_width_labels():
    """Issue 26: 1000 2000 5000 10000 ran into each other under a ten-column map."""
    assert [plotting.width_label(N) for N in (10, 500, 1000, 2000, 10000, 2500)] == [
        "10",
        "500",
        "1k",
        "2k",
        "10k",
        "2.5k",
    ]


def test_the_markov_scheme_draws_the_four_named_paths_through_their_heads():
    fig = plotting.markov_network_scheme()
    ax = fig.axes[0]
    texts = [(t.get_text(), t.get_position()) for t in ax.texts]
    lines = ax.get_lines()
    assert len(lines) == 4
    # each path passes through its layer-1 and layer-2 head (spec §A.3): g = good -> uniform, d = random -> uniform,
    # a1 = good -> random, a2 = random -> random (heads: good/random at layer 1, uniform/random at layer 2)
    x1 = sorted(x for (name, (x, y)) in texts if name in ("good", "random") and y < 0.5)
    x2 = sorted(x for (name, (x, y)) in texts if name in ("uniform", "random") and y > 0.5)
    by_row = sorted(texts, key=lambda t: (t[1][1], t[1][0]))
    assert [n for n, _ in by_row if n in ("good", "random", "uniform")] == ["good", "random", "uniform", "random"]
    want = {"g": (x1[0], x2[0]), "d": (x1[1], x2[0]), "a1": (x1[0], x2[1]), "a2": (x1[1], x2[1])}
    for line, name in zip(lines, ("g", "d", "a1", "a2"), strict=True):
        xs = line.get_xdata()
        assert np.allclose((xs[1], xs[2]), want[name], atol=0.03), name
        assert any(t.startswith(name + " ") for t, _ in texts)
    plt.close(fig)


def test_the_paths_scheme_draws_the_given_numbers_and_refuses_a_wrong_U():
    rng = np.random.default_rng(0)
    G = rng.standard_normal((4, 4))
    U = G @ G.T
    C = [[rng.standard_normal((3, 3)) for _ in range(4)] for _ in range(4)]
    fig = plotting.paths_scheme(U, {"GP": np.full(5, 0.1), "renormalised": np.full(5, 0.3)}, C)
    heat = fig.axes[1].get_images()[0]
    np.testing.assert_array_equal(heat.get_array(), U)
    bars = [p.get_height() for p in fig.axes[2].patches]
    assert sorted(set(np.round(bars, 6))) == [0.1, 0.3] and len(bars) == 10
    assert len(fig.axes[3].get_images()) == 16
    plt.close(fig)
    with pytest.raises(ValueError, match="4 paths"):
        plotting.paths_scheme(np.eye(3), {"GP": [0.1], "renormalised": [0.2]}, C)

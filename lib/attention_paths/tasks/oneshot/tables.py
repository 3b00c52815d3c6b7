"""Text tables of the omniglot_theory chapter."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attention_paths.tasks.oneshot.result import OneShotResult

__all__ = ["format_selection"]


def format_selection(res: OneShotResult, widths) -> str:
    """Test, MNIST and FashionMNIST accuracy at the selected temperatures, both protocols, with the GP."""
    sel = res.select
    lines = [f"{'protocol':<22}{'N':>7}{'tau':>7}{'test':>8}{'MNIST':>8}{'FMNIST':>8}"]
    for on, label in (("val", "ours (validation)"), ("test", "paper (test set)")):
        th, gp = sel[on]["theory"], sel[on]["gp"]
        for j, N in enumerate(widths):
            a = th.accuracy
            lines.append(
                f"{label if j == 0 else '':<22}{int(N):>7d}{float(th.tau[j]):>7g}"
                f"{a['test'][j]:8.1f}{a['MNIST'][j]:8.1f}{a['FashionMNIST'][j]:8.1f}"
            )
        a = gp.accuracy
        lines.append(
            f"{'':<22}{'GP':>7}{float(gp.tau):>7g}{float(a['test']):8.1f}{float(a['MNIST']):8.1f}"
            f"{float(a['FashionMNIST']):8.1f}"
        )
    return "\n".join(lines)

"""The theory: arrays in, arrays out, no files (spec T§1-T§14).  It reads one setting, where the low-rank
kernel products run (``$ATTENTION_PATHS_DEVICE``, through :func:`attention_paths.base.config.theory_device`).

data -> tokens -> :mod:`.attention` (heads) -> :mod:`.paths` (path inputs and features) -> :mod:`.kernels`
(path-path and renormalised kernels) -> :mod:`.action` (the action S(U) and its gradients, on an
:mod:`.architecture`) -> :mod:`.solver` (the order parameter U*) -> :mod:`.predictor` (mean and variance);
:mod:`.scores` (head scores from U), :mod:`.network` (the finite network, for sampling and tests) and
:mod:`.checks` (every input check).  The public names are re-exported by :mod:`attention_paths`.
"""

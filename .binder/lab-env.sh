# The environment JupyterLab runs the book's chapters in, in one place: sourced by `make lab` (Makefile) and
# by Binder's start script (.binder/start); tests/book/test_lab.py starts the server through `make lab`.
#
# * JUPYTER_CONFIG_PATH gains this folder's jupyter/ (absolute), whose labconfig/default_setting_overrides.json
#   makes jupytext's "Jupytext Notebook" the default viewer of .md files, so a chapter opens as a notebook
#   (the project's own setting: nothing is written to the user's ~/.jupyter);
# * REPRO_SCALE: quick unless already set (make lab REPRO_SCALE=paper);
# * the book build's quiet defaults (as in the Makefile): no debugger warning about frozen modules, and JAX does
#   not take most of a GPU's memory at start.
# ATTENTION_PATHS_DATA is left as it is (unset: the package's default dataset root).
_lab_env_dir="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)"
export JUPYTER_CONFIG_PATH="$_lab_env_dir/jupyter${JUPYTER_CONFIG_PATH:+:$JUPYTER_CONFIG_PATH}"
export REPRO_SCALE="${REPRO_SCALE:-quick}"
export PYDEVD_DISABLE_FILE_VALIDATION=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false
unset _lab_env_dir

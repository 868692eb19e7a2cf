"""jaxnn's process-wide settings: the persistent compilation cache that lets a
new process load the programs earlier ones compiled (``~/.cache/jaxnn/xla``;
``JAXNN_CACHE_DIR`` moves it, empty turns it off).

See :mod:`jaxnn._src.config` for details.
"""

from jaxnn._src.config import ENV_VAR, MAX_SIZE, cache_dir, default_cache_dir, drop_cut_short, set_cache_dir

__all__ = ["ENV_VAR", "MAX_SIZE", "cache_dir", "default_cache_dir", "drop_cut_short", "set_cache_dir"]

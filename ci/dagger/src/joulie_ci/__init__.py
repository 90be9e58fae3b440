"""Joulie's Dagger module (``ci/dagger``): the functions are in ``main.py`` (``JoulieCi``, the
entry point named in pyproject.toml), every command they run is in ``commands.py``.

Kept free of the Dagger SDK so ``joulie_ci.commands`` imports (and is tested) without it.
"""

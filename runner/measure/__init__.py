"""The measuring code: the only package that imports torch and transformers, used only by `kvreport run`."""

import os

# Every transformers import lives in this package, so this is the one place to set the hub's offline switches,
# before any of them: a stray hub lookup must fail fast, not hang. setdefault: a user's own setting wins.
for _name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY"):
    os.environ.setdefault(_name, "1")

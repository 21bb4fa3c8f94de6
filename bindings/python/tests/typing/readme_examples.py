"""Writes each Python example of README.md that imports omprpc into its own module under the
directory given (``make python-tests`` runs ``mypy --strict`` over them)."""

import re
import sys
from pathlib import Path

readme = Path(__file__).resolve().parents[2] / "README.md"
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
blocks = re.findall(r"```python\n(.*?)```", readme.read_text(), re.S)
examples = [b for b in blocks if re.search(r"^from omprpc[. ]", b, re.M)]
if not examples:
    sys.exit(f"{readme}: no Python example imports omprpc")
for i, code in enumerate(examples, 1):
    (out / f"readme_example_{i}.py").write_text(code)

"""Print the third-party requirements of the package and the extras named (self-references expanded).

.ci/newer-pythons installs these ahead of the package, in the background (see .ci/run):
    python .ci/dependencies.py test-core
"""

import re
import sys
import tomllib
from pathlib import Path

project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
own = re.compile(rf"{re.escape(project['name'])}\[([^\]]+)\]$")
requirements, todo, seen = list(project["dependencies"]), sys.argv[1:], set()
while todo:
    extra = todo.pop()
    if extra not in seen:
        seen.add(extra)
        for requirement in project["optional-dependencies"][extra]:
            found = own.match(requirement)
            todo += found.group(1).split(",") if found else []
            requirements += [] if found else [requirement]
print("\n".join(dict.fromkeys(requirements)))

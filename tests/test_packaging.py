"""environment.yml mirrors pyproject.toml's requirements."""

import re
import tomllib

import yaml


def _names(reqs):
    return {re.split(r"[<>=!~\[ ]", r, maxsplit=1)[0].lower() for r in reqs}


def test_environment_yml_mirrors_pyproject():
    project = tomllib.load(open("pyproject.toml", "rb"))["project"]
    wanted = _names(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        wanted |= _names(extra)
    env = yaml.safe_load(open("environment.yml"))
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert wanted <= _names(p for p in pip if not p.startswith("-e"))

"""A twin's objects deployed by the program itself: `pulumi up` of the mapped stack.

The twin's planes (tests/realtier/twin_run.py) are the stack's clusters as `source: existing`
(`twin.twin_raw`: each plane's kubeconfig a secret config key, as a user passes one), and the
project's `__main__.py` runs as an Automation API inline program through the cached `pulumi` CLI
and `pulumi-resource-kubernetes` (test_pulumi_engine.py's engine; the module proxy serves no
Python language host). So every Kueue and MultiKueue object of the twin, worker credentials
included, is what `pulumi up` of that stack makes, in the order and with the waits it uses.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from pulumi import automation as auto

from constants import CONFIG_KEY, PROJECT
from tests.realtier.harness import ROOT, StartError, cache_paths
from tests.realtier.twin import load_stack, twin_raw

PASSPHRASE: Final = "realtier-twin-passphrase"  # a throwaway state in a tmp dir
LOCATION: Final = "westeurope"  # required by the config; nothing Azure is made


def kubeconfig_key(cluster: str) -> str:
    return f"kubeconfig-{cluster}"


@dataclass
class EngineDeploy:
    """One twin's stack in its own file backend; the engine's output lines."""

    stack: auto.Stack
    log: list[str] = field(default_factory=list[str])
    counts: dict[str, int] = field(default_factory=dict[str, int])

    def add(self, line: str) -> None:
        self.log.append(line.rstrip("\n"))


def engine_available() -> tuple[bool, str]:
    paths = cache_paths()
    cli, provider = paths.get("pulumi"), paths.get("pulumi-resource-kubernetes")
    if cli is None or provider is None or not cli.is_file() or not provider.is_file():
        return False, "pulumi CLI or pulumi-resource-kubernetes not built"
    return True, ""


def deploy_twin(stack: str, kubeconfigs: dict[str, Path], work: Path) -> EngineDeploy:
    """`pulumi up` of the committed stack's twin on the planes; raises with the engine's error
    lines when it fails."""
    paths = cache_paths()
    cli, provider = paths["pulumi"], paths["pulumi-resource-kubernetes"]

    def program() -> None:
        if str(ROOT) not in sys.path:
            sys.path.insert(0, str(ROOT))
        runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")

    (work / "state").mkdir(parents=True)
    (work / "project").mkdir()
    env = {
        "PULUMI_HOME": str(work / "home"),
        "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
        "PULUMI_SKIP_UPDATE_CHECK": "1",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "PATH": f"{provider.parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    options = auto.LocalWorkspaceOptions(
        work_dir=str(work / "project"),
        pulumi_home=str(work / "home"),
        env_vars=env,
        secrets_provider="passphrase",
        project_settings=auto.ProjectSettings(
            name=PROJECT,
            runtime="python",
            backend=auto.ProjectBackend(url=f"file://{work / 'state'}"),
        ),
        pulumi_command=auto.PulumiCommand(root=str(cli.parent.parent), skip_version_check=True),
    )
    deploy = EngineDeploy(
        auto.create_or_select_stack(
            f"twin-{stack}", project_name=PROJECT, program=program, opts=options
        )
    )
    for name, path in kubeconfigs.items():
        deploy.stack.set_config(
            f"{PROJECT}:{kubeconfig_key(name)}",
            auto.ConfigValue(value=path.read_text(), secret=True),
        )
    raw = twin_raw(load_stack(stack), lambda name: {"kubeconfigSecret": kubeconfig_key(name)})
    deploy.stack.set_config("azure-native:location", auto.ConfigValue(value=LOCATION))
    deploy.stack.set_config(f"{PROJECT}:{CONFIG_KEY}", auto.ConfigValue(value=json.dumps(raw)))
    try:
        result = deploy.stack.up(on_output=deploy.add, color="never")
    except auto.CommandError as exc:
        errors = [line for line in deploy.log if "error" in line.lower()]
        (work / "engine-output.log").write_text("\n".join(deploy.log) + "\n")
        raise StartError(
            f"pulumi up of the {stack} twin failed:\n" + "\n".join(errors[-30:])
        ) from exc
    deploy.counts = {
        str(getattr(op, "value", op)): n
        for op, n in (result.summary.resource_changes or {}).items()
    }
    return deploy

"""The real engine, as every real-tier deploy runs it: one Automation API workspace recipe.

The program is the project's own `__main__.py`, run as an Automation API inline program (the
module proxy serves no `pulumi-language-python`, so the in-process language host stands in for
it), by the cached `pulumi` CLI and `pulumi-resource-kubernetes` (found on PATH: no plugin is
downloaded), with a file backend and a fixed passphrase in a temporary directory. The workspace
writes its Pulumi.yaml and Pulumi.<stack>.yaml in that directory, never in the project.
The program's one dynamic resource (components/retire.py) runs in `pulumi-resource-pulumi-python`,
which the Pulumi CLI's distribution ships beside `pulumi` and the built CLI lacks: `workspace`
writes that plugin's two lines (this interpreter, `-m pulumi.dynamic`, the project importable).

Each plane's kubeconfig is a secret stack config key (`kubeconfig_key`), as a user passes one
(`existing.kubeconfigSecret`): file paths must stay inside the project, and the planes'
kubeconfigs live in a temporary directory.

Checkpoints: by default the engine saves the whole state after every step of an operation, so a
CLI that dies mid-operation leaves a state that knows what it made (the file backend rewrites the
dev twin's 8 MB state a few hundred times per `up`: 40 s of a 94-resource `up`, 14 s without). Only
a test that kills the engine reads such an intermediate state; every other test reads the state
the operation ends with, which the engine saves either way (`PULUMI_SKIP_CHECKPOINTS`: only the
final save, after a failed operation too). So `workspace` skips them except
within `EngineRun.checkpoints()`: around the operations test_faults_deploy.py kills, and only those
(the recovery, the no-op `up` and the `destroy` after a kill read only their own final state).
"""

from __future__ import annotations

import contextlib
import json
import os
import runpy
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pulumi import automation as auto

from checks.stack import parse_fleet
from constants import CONFIG_KEY, PROJECT
from testkit.realtier.harness import ROOT, cache_paths
from testkit.realtier.pulumi_cli import PulumiCli

PASSPHRASE: Final = "realtier-fixed-passphrase"  # a throwaway state in a tmp dir
LOCATION: Final = "westeurope"  # required by the config; nothing Azure is made


def kubeconfig_key(cluster: str) -> str:
    """The secret stack config key that holds a plane's kubeconfig."""
    return f"kubeconfig-{cluster}"


@dataclass(frozen=True, slots=True)
class Engine:
    cli: Path  # the cached `pulumi`
    provider: Path  # the cached `pulumi-resource-kubernetes`


def find_engine() -> tuple[Engine | None, str]:
    """The cached engine, or None and why not."""
    paths = cache_paths()
    cli, provider = paths.get("pulumi"), paths.get("pulumi-resource-kubernetes")
    if cli is None or provider is None or not cli.is_file() or not provider.is_file():
        return None, "pulumi CLI or pulumi-resource-kubernetes not built"
    return Engine(cli, provider), ""


@dataclass
class EngineRun:
    """One stack in its own file backend; every line the engine printed."""

    stack: auto.Stack
    engine: Engine
    env: dict[str, str]  # the CLI's environment (an operator's `pulumi` runs with the same)
    work: Path
    log: list[str] = field(default_factory=list[str])
    created: int | None = None  # what the first `up` created, once it passed (later tests read it)

    def add(self, line: str) -> None:
        """on_output: one line of the engine's output (newline or not, depending on the SDK)."""
        self.log.append(line.rstrip("\n"))

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.log[-lines:])

    def errors(self, lines: int = 30) -> str:
        """The engine's error lines (its output is long; a CI log shows only the start)."""
        return "\n".join([line for line in self.log if "error" in line.lower()][-lines:])

    @contextlib.contextmanager
    def checkpoints(self) -> Iterator[None]:
        """Within: the engine saves a checkpoint after every step, for an operation a test kills
        (the state a killed CLI leaves is what the recovery reads). The workspace and `cli` read
        `env` on every command."""
        assert self.stack.workspace.env_vars is self.env, "the workspace has its own environment"
        self.env["PULUMI_SKIP_CHECKPOINTS"] = "false"
        try:
            yield
        finally:
            self.env["PULUMI_SKIP_CHECKPOINTS"] = "true"

    def up(self) -> auto.UpResult:
        """`pulumi up`; a failure raises AssertionError with the engine's error lines first."""
        settle_inline_runs()
        try:
            return self.stack.up(on_output=self.add, color="never")
        except auto.CommandError as exc:
            self.save()
            raise AssertionError(
                f"pulumi up failed; engine errors:\n{self.errors()}\n--- tail:\n{self.tail(20)}"
            ) from exc

    @property
    def cli(self) -> PulumiCli:
        """The `pulumi` CLI on this stack, as an operator runs it (same backend, home,
        passphrase; the workspace's project directory, where this stack is selected)."""
        return PulumiCli(self.engine.cli, self.work / "project", self.env)

    def _resources(self) -> list[dict[str, Any]]:
        return (self.stack.export_stack().deployment or {}).get("resources") or []

    def urns(self) -> set[str]:
        return {str(r["urn"]) for r in self._resources()}

    def types(self) -> set[str]:
        """The types of the state's custom resources (what exists on a cluster), providers and
        components (`kubernetes:yaml/v2:ConfigGroup`, the fleet's own) left out."""
        return {
            str(r["type"])
            for r in self._resources()
            if r.get("custom") and not str(r["type"]).startswith("pulumi:providers:")
        }

    def external_reads(self) -> int:
        """`.get` reads in the state (the credential proofs): destroy discards them."""
        return sum(1 for r in self._resources() if r.get("external"))

    def save(self) -> Path:
        """The engine's whole output, for whoever reads a failure (tests show only its tail)."""
        path = self.work / "engine-output.log"
        path.write_text("\n".join(self.log) + "\n")
        return path


INLINE_RUN_TIMEOUT: Final = 120.0
_SERVER_FILE: Final = os.path.join("pulumi", "automation", "_server.py")


def inline_runs() -> int:
    """Threads (other than this one) still inside an inline program's run: the Automation API's
    language server (pulumi/automation/_server.py, `LanguageServer.Run`)."""
    me = threading.get_ident()
    running = 0
    for ident, frame in sys._current_frames().items():  # pyright: ignore[reportPrivateUsage]
        if ident == me:
            continue
        current = frame
        while current is not None:
            code = current.f_code
            if code.co_name == "Run" and code.co_filename.endswith(_SERVER_FILE):
                running += 1
                break
            current = current.f_back
    return running


def settle_inline_runs(timeout: float = INLINE_RUN_TIMEOUT) -> float:
    """Wait until no inline program of an earlier operation still runs in this process.

    The Python SDK keeps its settings (the monitor's address among them) in process globals,
    and each run resets them. A run whose CLI was killed keeps going until its next call to the
    dead monitor fails; started meanwhile, the next run's settings would be taken by its
    leftover registrations (seen on the real tier: the killed-`up` test's reference run failed
    with "Resource monitor has terminated"). Returns the seconds waited."""
    t0 = time.monotonic()
    while (left := inline_runs()) and time.monotonic() - t0 < timeout:
        time.sleep(0.2)
    assert not left, f"{left} inline program run(s) still going after {timeout:.0f}s"
    return time.monotonic() - t0


def workspace(name: str, work: Path, engine: Engine) -> EngineRun:
    """A new stack `name` of the project in `work` (state, home and work dir inside it); the
    engine saves intermediate checkpoints only within `EngineRun.checkpoints()` (the module's
    docstring)."""

    def program() -> None:
        # The project's composition root, as `pulumi up` would run it from the project dir.
        if str(ROOT) not in sys.path:
            sys.path.insert(0, str(ROOT))
        runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")

    (work / "state").mkdir(parents=True)
    (work / "project").mkdir()
    plugins = work / "plugins"
    plugins.mkdir()
    dynamic = plugins / "pulumi-resource-pulumi-python"
    dynamic.write_text(
        f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -u -m pulumi.dynamic "$@"\n'
    )
    dynamic.chmod(0o755)
    env = {
        "PULUMI_HOME": str(work / "home"),
        "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
        "PULUMI_SKIP_UPDATE_CHECK": "1",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "PULUMI_SKIP_CHECKPOINTS": "true",
        "PATH": os.pathsep.join(
            [str(engine.provider.parent), str(plugins), os.environ.get("PATH", "")]
        ),
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
        pulumi_command=auto.PulumiCommand(
            root=str(engine.cli.parent.parent), skip_version_check=True
        ),
    )
    stack = auto.create_or_select_stack(name, project_name=PROJECT, program=program, opts=options)
    stack.set_config("azure-native:location", auto.ConfigValue(value=LOCATION))
    return EngineRun(stack, engine, env, work)


def configure(
    run: EngineRun, kubeconfigs: Mapping[str, Path | str], raw: Mapping[str, Any]
) -> None:
    """Each plane's kubeconfig as its secret key, and `raw` as the stack's fleet (validated
    first: a bad fleet fails here, not in the engine). One `pulumi config set-all`, not a CLI
    process per key."""
    parse_fleet(dict(raw), source="realtier")
    values = {
        f"{PROJECT}:{kubeconfig_key(name)}": auto.ConfigValue(
            value=Path(path).read_text(), secret=True
        )
        for name, path in kubeconfigs.items()
    }
    # A JSON string: pulumi.Config.get_object parses it, as it does a YAML object from a file.
    values[f"{PROJECT}:{CONFIG_KEY}"] = auto.ConfigValue(value=json.dumps(raw))
    run.stack.set_all_config(values)

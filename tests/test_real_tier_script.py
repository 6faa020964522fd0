"""Offline checks of scripts/build-real-tier-tools (it builds nothing here).

The script's pins must follow the locked Python SDKs and the project's default Kueue version; its
cache lies outside the repo; its replace-line generator (the part most likely to rot) is exercised
on small go.mod files by sourcing the script, which then only defines its functions.
"""

from __future__ import annotations

import os
import re
import subprocess
from importlib.metadata import version
from pathlib import Path

import pytest

from config.loader import read_stack_file
from config.models import FleetConfig
from testkit.repo import COMMITTED_STACKS
from upstream.frameworks import KUBERAY, TRAINING_OPERATOR
from upstream.karmada import (
    DEFAULT_KARMADA_CHART_VERSION,
    DEFAULT_KRUISE_CHART_VERSION,
    kruise_app_version,
)
from upstream.kueue import DEFAULT_KUEUE_VERSION, KUEUE_VERSIONS

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "build-real-tier-tools"
TOOLS = (
    "pulumi",
    "pulumi-language-python",
    "pulumi-resource-kubernetes",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "etcd",
    "kueue",
    "kwok",
    "kruise",
    "karmada",
    "kueue-previous",
    "cluster-autoscaler",
    "prometheus",
    "kube-apiserver-next",
    "kube-controller-manager-next",
    "training-operator",
    "kuberay",
)


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **(env or {})},
    )


def _pins() -> dict[str, str]:
    """NAME=value lines of the pinned block at the top of the script."""
    text = SCRIPT.read_text()
    block = text.split("# Pinned versions", 1)[1].split("\n# ----", 2)[1]
    return dict(re.findall(r"^([A-Z][A-Z0-9_]*)=(\S+)$", block, flags=re.MULTILINE))


def _semver(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _bash(snippet: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run `snippet` with the script sourced (functions only, main does not run)."""
    return subprocess.run(
        ["bash", "-c", f'set -euo pipefail; source "{SCRIPT}"; {snippet}'],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "AKS_BATCH_FLEET_TOOLS_CACHE": str(tmp_path / "cache")},
    )


def test_bash_syntax() -> None:
    result = subprocess.run(
        ["bash", "-n", str(SCRIPT)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert os.access(SCRIPT, os.X_OK)


def test_list_names_every_tool() -> None:
    result = _run("--list")
    assert result.returncode == 0, result.stderr
    assert tuple(result.stdout.split()) == TOOLS


def test_print_paths_lists_every_tool_under_the_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    result = _run("--print-paths", env={"AKS_BATCH_FLEET_TOOLS_CACHE": str(cache)})
    assert result.returncode == 0, result.stderr
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert [name for name, _ in rows] == list(TOOLS)
    for name, path in rows:
        binary = Path(path)
        assert binary.parent.name == "bin"
        assert binary.parent.parent.parent == cache, path
        assert re.fullmatch(rf"{re.escape(name)}-\d+\.\d+\.\d+", binary.parent.parent.name), path
    assert not cache.exists(), "--print-paths must not create or build anything"


def test_default_cache_is_outside_the_repo(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "AKS_BATCH_FLEET_TOOLS_CACHE"}
    result = subprocess.run(
        [str(SCRIPT), "--print-paths", "--only", "kueue"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**env, "HOME": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    name, path = result.stdout.strip().split("\t")
    assert name == "kueue"
    assert Path(path).is_relative_to(tmp_path / ".cache" / "aks-batch-fleet" / "real-tier")
    assert not Path(path).is_relative_to(ROOT)


def test_prune_deletes_the_go_caches_and_keeps_the_tools(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    readonly = cache / "_go" / "mod" / "example.com" / "m@v1.0.0"
    readonly.mkdir(parents=True)
    (readonly / "go.mod").write_text("module example.com/m\n")
    readonly.chmod(0o555)  # the Go module cache is read-only
    tool = cache / "kueue-0.0.0" / "bin" / "kueue-manager"
    tool.parent.mkdir(parents=True)
    tool.write_text("")
    result = _run("--prune", env={"AKS_BATCH_FLEET_TOOLS_CACHE": str(cache)})
    assert result.returncode == 0, result.stderr
    assert not (cache / "_go").exists()
    assert tool.exists()


def test_unknown_tool_is_a_usage_error() -> None:
    result = _run("--only", "kubectl", "--print-paths")
    assert result.returncode == 2
    assert "unknown tool" in result.stderr


def test_pins_follow_the_locked_python_sdks() -> None:
    pins = _pins()
    assert pins["PULUMI_SDK_VERSION"] == version("pulumi")
    assert pins["PULUMI_KUBERNETES_SDK_VERSION"] == version("pulumi-kubernetes")
    # The CLI may only be newer than the SDK (the module proxy does not serve pkg/v3 at the SDK's
    # version); the language host is pinned to the SDK itself.
    assert _semver(pins["PULUMI_CLI_VERSION"]) >= _semver(version("pulumi"))
    assert pins["PULUMI_LANGUAGE_PYTHON_VERSION"] == version("pulumi")
    # The provider is the newest one the proxy serves; never newer than the SDK that drives it.
    assert _semver(pins["PULUMI_KUBERNETES_PROVIDER_VERSION"]) <= _semver(
        version("pulumi-kubernetes")
    )
    assert re.fullmatch(r"1\.\d+\.\d+", pins["KUBERNETES_VERSION"])


def test_twin_minor_is_the_stacks_minor() -> None:
    """The twins run the minor the default and the committed stacks ask AKS for, never a drift."""
    twin = ".".join(_pins()["KUBERNETES_VERSION"].split(".")[:2])
    stacks = {FleetConfig.model_fields["kubernetes_version"].default}
    stacks |= {read_stack_file(s, ROOT)[0]["kubernetesVersion"] for s in COMMITTED_STACKS}
    assert len(stacks) == 1, f"the default and the committed stacks disagree: {sorted(stacks)}"
    assert stacks == {twin}, (
        f"the twins run {twin} and the stacks ask for {sorted(stacks)}: move the twins "
        "(KUBERNETES_VERSION in scripts/build-real-tier-tools) with the stacks"
    )


def test_next_minor_is_one_minor_up() -> None:
    """The upgrade test moves a twin one minor up, as AKS does (preflight/upgrades.py)."""
    pins = _pins()
    major, minor, _ = _semver(pins["KUBERNETES_VERSION"])
    assert _semver(pins["KUBERNETES_NEXT_VERSION"])[:2] == (major, minor + 1)


@pytest.mark.parametrize("tool", ["kube-apiserver-next", "kube-controller-manager-next"])
def test_next_minor_binaries_are_built_from_the_next_version(tool: str, tmp_path: Path) -> None:
    """Its staging modules, version stamps and binary name: the same tool, one minor up."""
    gomod = tmp_path / "go.mod"
    gomod.write_text("module k8s.io/kubernetes\n\nreplace k8s.io/api => ./staging/src/k8s.io/api\n")
    snippet = (
        f'replace_lines {tool} "{gomod}"; tool_version {tool}; tool_binary {tool}; '
        'kube_ldflags "$KUBERNETES_NEXT_VERSION"'
    )
    result = _bash(snippet, tmp_path)
    assert result.returncode == 0, result.stderr
    k8s = _pins()["KUBERNETES_NEXT_VERSION"]
    lines = result.stdout.splitlines()
    assert lines[:3] == [
        f"replace k8s.io/api => k8s.io/api v0.{k8s.removeprefix('1.')}",
        k8s,
        tool.removesuffix("-next"),
    ]
    assert f"-X k8s.io/component-base/version.gitVersion=v{k8s}" in lines[3]
    assert f"gitMinor={k8s.split('.')[1]}" in lines[3]


def test_kueue_pin_is_the_projects_default_kueue_version() -> None:
    pins = _pins()
    config = ROOT / "upstream" / "kueue.py"
    builder = ROOT / "builders" / "kueue.py"
    if config.exists() and "DEFAULT_KUEUE_VERSION" in config.read_text():
        found = re.search(r'^DEFAULT_KUEUE_VERSION\s*=\s*"([^"]+)"', config.read_text(), re.M)
        assert found, "DEFAULT_KUEUE_VERSION is not a plain string literal"
        assert pins["KUEUE_VERSION"] == found.group(1)
    elif builder.exists():
        assert pins["KUEUE_VERSION"] in builder.read_text()
    else:
        pytest.skip("no default Kueue version in the project yet (config/ or builders/kueue.py)")


def test_kueue_previous_pin_is_an_older_release_of_a_supported_minor(tmp_path: Path) -> None:
    """The upgrade test starts from kueue-previous: an older minor than the default that the
    project supports (its CRDs and tables are the supported patch's), built like kueue itself."""
    previous = _semver(_pins()["KUEUE_PREVIOUS_VERSION"])
    assert previous < _semver(DEFAULT_KUEUE_VERSION)
    assert previous[:2] in {_semver(v)[:2] for v in KUEUE_VERSIONS if v != DEFAULT_KUEUE_VERSION}
    result = _bash(
        "tool_version kueue-previous; tool_path kueue-previous; type build_kueue-previous", tmp_path
    )
    assert result.returncode == 0, result.stderr
    pin = _pins()["KUEUE_PREVIOUS_VERSION"]
    lines = result.stdout.splitlines()
    assert lines[:2] == [pin, str(tmp_path / "cache" / f"kueue-previous-{pin}/bin/kueue-manager")]
    assert 'sigs.k8s.io/kueue "v$KUEUE_PREVIOUS_VERSION" sigs.k8s.io/kueue/cmd/kueue' in (
        result.stdout
    )


def test_kruise_pin_is_the_deployed_release_plus_its_patch() -> None:
    """The real tier builds kruise-manager v1.9.1 while members get chart 1.9.0: 1.9.1 is the
    1.9.0 release tag plus one fix (the proxy's "v1.9.0" is a master commit). Same minor, never
    older than the image the chart deploys; the two must move together."""
    built = _semver(_pins()["KRUISE_VERSION"])
    deployed = _semver(kruise_app_version(DEFAULT_KRUISE_CHART_VERSION).removeprefix("v"))
    assert built[:2] == deployed[:2]
    assert built >= deployed


def test_job_operator_pins_are_the_versions_the_stack_deploys() -> None:
    """The real tier runs the operators the stack installs on workers, at the same versions (and
    the manager's CRDs come from the same modules)."""
    assert _pins()["KUBERAY_VERSION"] == KUBERAY.default_version
    assert _pins()["TRAINING_OPERATOR_VERSION"] == TRAINING_OPERATOR.default_version


def test_kuberay_is_built_from_its_module_root_with_its_crds_beside_it(tmp_path: Path) -> None:
    """The operator's RayService controller always starts and needs the RayService CRD, which
    the manager's pins do not hold: the build copies the module's CRDs beside the binary, and a
    binary without them counts as not built."""
    text = SCRIPT.read_text()
    assert 'github.com/ray-project/kuberay/ray-operator "v$KUBERAY_VERSION"' in text
    assert "ray.io_rayservices.yaml" in text
    out = _bash(
        'd=$(tool_dir kuberay); mkdir -p "$d/bin"; '
        'printf "#!/bin/sh\n" >"$d/bin/kuberay"; chmod +x "$d/bin/kuberay"; '
        'echo "kuberay $KUBERAY_VERSION" >"$d/bin/.stamp"; '
        "is_built kuberay && echo built || echo missing; "
        'mkdir -p "$d/crds"; for c in "${KUBERAY_CRDS[@]}"; do touch "$d/crds/$c"; done; '
        "is_built kuberay && echo built || echo missing",
        tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["missing", "built"]


def test_kruise_is_built_from_its_module_root_with_upstreams_replaces(tmp_path: Path) -> None:
    """Kruise's go.mod replaces (none local) are copied verbatim; its main package is the root."""
    gomod = tmp_path / "go.mod"
    gomod.write_text(
        "module github.com/openkruise/kruise\n\ngo 1.23.0\n\n"
        "replace (\n"
        "\tgolang.org/x/sys => golang.org/x/sys v0.19.0\n"
        "\tk8s.io/api => k8s.io/api v0.32.10\n"
        ")\n"
    )
    result = _bash(
        f'replace_lines kruise "{gomod}"; tool_version kruise; tool_path kruise; type build_kruise',
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    pin = _pins()["KRUISE_VERSION"]
    lines = result.stdout.splitlines()
    assert lines[:4] == [
        "replace golang.org/x/sys => golang.org/x/sys v0.19.0",
        "replace k8s.io/api => k8s.io/api v0.32.10",
        pin,
        str(tmp_path / "cache" / f"kruise-{pin}/bin/kruise-manager"),
    ]
    assert 'github.com/openkruise/kruise "v$KRUISE_VERSION" github.com/openkruise/kruise ' in (
        result.stdout
    )


def test_karmada_pin_is_the_deployed_chart() -> None:
    """The real tier's Karmada control plane is the release the program installs by chart."""
    assert "v" + _pins()["KARMADA_VERSION"] == DEFAULT_KARMADA_CHART_VERSION


def test_karmada_builds_its_four_components_from_one_module(tmp_path: Path) -> None:
    """No replaces in Karmada's go.mod; four binaries (cmd/<name without karmada->) in one bin/,
    the controller manager being the tool's binary (the one --print-paths names)."""
    gomod = tmp_path / "go.mod"
    gomod.write_text("module github.com/karmada-io/karmada\n\ngo 1.24.0\n")
    result = _bash(
        f'replace_lines karmada "{gomod}"; tool_version karmada; tool_path karmada; '
        'echo "${KARMADA_BINARIES[*]}"; type build_karmada',
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    pin = _pins()["KARMADA_VERSION"]
    lines = result.stdout.splitlines()
    assert lines[:3] == [
        pin,
        str(tmp_path / "cache" / f"karmada-{pin}/bin/karmada-controller-manager"),
        "karmada-aggregated-apiserver karmada-controller-manager karmada-scheduler karmada-webhook",
    ]
    assert "$module/cmd/${bin#karmada-}" in result.stdout


def test_cluster_autoscaler_maps_its_apis_replace_to_the_pinned_pseudo_version(
    tmp_path: Path,
) -> None:
    """The CA's `apis => ./apis` becomes the apis pseudo-version pinned (Kueue's); its other
    replaces are copied verbatim."""
    gomod = tmp_path / "go.mod"
    gomod.write_text(
        "module k8s.io/autoscaler/cluster-autoscaler\n\ngo 1.24.0\n\n"
        "replace k8s.io/kms => k8s.io/kms v0.33.1\n\n"
        "replace k8s.io/autoscaler/cluster-autoscaler/apis => ./apis\n"
    )
    result = _bash(
        f'replace_lines cluster-autoscaler "{gomod}"; tool_version cluster-autoscaler; '
        "tool_path cluster-autoscaler",
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    pins = _pins()
    apis = "k8s.io/autoscaler/cluster-autoscaler/apis"
    assert result.stdout.splitlines() == [
        "replace k8s.io/kms => k8s.io/kms v0.33.1",
        f"replace {apis} => {apis} {pins['CLUSTER_AUTOSCALER_APIS_VERSION']}",
        pins["CLUSTER_AUTOSCALER_VERSION"],
        str(
            tmp_path
            / "cache"
            / f"cluster-autoscaler-{pins['CLUSTER_AUTOSCALER_VERSION']}/bin/cluster-autoscaler"
        ),
    ]


def test_cluster_autoscaler_replaces_kubernetes_staging_modules_not_yet_replaced(
    tmp_path: Path,
) -> None:
    """k8s.io/kubernetes (a CA requirement) needs its staging modules at v0.0.0: each gets the
    pinned published version, except those the wrapper already replaces. `gocmd` is a test
    double that answers `go mod download -json` with a local go.mod, as the proxy would."""
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    upstream = tmp_path / "ca.mod"
    upstream.write_text(
        "module k8s.io/autoscaler/cluster-autoscaler\n\nrequire (\n\tk8s.io/kubernetes v1.33.1\n)\n"
    )
    (work / "upstream.mod.path").write_text(str(upstream))
    kubernetes = tmp_path / "kubernetes.mod"
    kubernetes.write_text(
        "module k8s.io/kubernetes\n\nreplace (\n"
        "\tk8s.io/api => ./staging/src/k8s.io/api\n"
        "\tk8s.io/kms => ./staging/src/k8s.io/kms\n"
        "\tgithub.com/x/y => github.com/x/z v1.0.0\n"
        ")\n"
    )
    (work / "src" / "go.mod").write_text(
        "module realtier.local/ca\n\nreplace k8s.io/kms => k8s.io/kms v0.33.1\n"
    )
    fake_gocmd = (
        'gocmd() { [[ "$*" == "mod download -json k8s.io/kubernetes@v1.33.1" ]] || return 9; '
        f'printf \'{{\\n\\t"GoMod": "%s",\\n}}\\n\' "{kubernetes}"; }}'
    )
    result = _bash(
        f'{fake_gocmd}; WORK="{work}"; CURRENT_LOG=/dev/null; ca_staging_replaces; '
        f'cat "{work}/src/go.mod"',
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    staging = _pins()["CLUSTER_AUTOSCALER_KUBE_STAGING_VERSION"]
    replaces = [line for line in result.stdout.splitlines() if line.startswith("replace ")]
    assert replaces == [
        "replace k8s.io/kms => k8s.io/kms v0.33.1",
        f"replace k8s.io/api => k8s.io/api {staging}",
    ]


def test_cluster_autoscaler_builds_only_the_kwok_provider_without_checksums_it_cannot_get(
    tmp_path: Path,
) -> None:
    result = _bash("type build_cluster-autoscaler", tmp_path)
    assert result.returncode == 0, result.stderr
    assert "-tags kwok" in result.stdout
    assert "GONOSUMDB=$CLUSTER_AUTOSCALER_NOSUMDB" in result.stdout
    nosumdb = _pins()["CLUSTER_AUTOSCALER_NOSUMDB"].split(",")
    assert "k8s.io/autoscaler/cluster-autoscaler" in nosumdb


def test_prometheus_module_version_is_its_release(tmp_path: Path) -> None:
    """Prometheus 3.x is published as module v0.3XX.Y: 3.16.0 is v0.316.0. The tool is named by
    the release (what `prometheus --version` prints, what the version check expects)."""
    pins = _pins()
    major, minor, patch = _semver(pins["PROMETHEUS_VERSION"])
    assert major == 3
    assert pins["PROMETHEUS_MODULE_VERSION"] == f"v0.{300 + minor}.{patch}"
    result = _bash(
        "tool_version prometheus; tool_binary prometheus; version_expect prometheus; "
        "type build_prometheus",
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:3] == [
        pins["PROMETHEUS_VERSION"],
        "prometheus",
        f"prometheus, version {pins['PROMETHEUS_VERSION']} ",
    ]
    body = "\n".join(lines[3:])
    assert "github.com/prometheus/prometheus/cmd/prometheus" in body
    assert "$PROMETHEUS_MODULE_VERSION" in body
    assert "builtinassets" not in body  # the web UI's assets are not in the module


def test_each_version_is_written_once() -> None:
    """Versions live in the pin block only; the rest of the script refers to the variables."""
    text = SCRIPT.read_text()
    body = text.split("# Pinned versions", 1)[1].split("\n# ----", 2)[2]
    for name, value in _pins().items():
        if re.fullmatch(r"v?\d+\.\d+\.\d+", value):
            assert value not in body, f"{name}={value} is repeated outside the pin block"


def test_replace_lines_map_local_replaces_to_published_versions(tmp_path: Path) -> None:
    gomod = tmp_path / "go.mod"
    gomod.write_text(
        "module k8s.io/kubernetes\n\ngo 1.24.0\n\n"
        "require k8s.io/api v0.0.0\n\n"
        "replace (\n"
        "\tk8s.io/api => ./staging/src/k8s.io/api\n"
        "\tk8s.io/client-go => ./staging/src/k8s.io/client-go // comment\n"
        ")\n"
        "replace github.com/atotto/clipboard => github.com/tgummerer/clipboard v0.0.0-2024\n"
    )
    result = _bash(f'replace_lines kube-apiserver "{gomod}"', tmp_path)
    assert result.returncode == 0, result.stderr
    minor = _pins()["KUBERNETES_VERSION"].removeprefix("1.")
    assert result.stdout.splitlines() == [
        f"replace k8s.io/api => k8s.io/api v0.{minor}",
        f"replace k8s.io/client-go => k8s.io/client-go v0.{minor}",
        "replace github.com/atotto/clipboard => github.com/tgummerer/clipboard v0.0.0-2024",
    ]


@pytest.mark.parametrize("tool", ["kube-apiserver", "kube-controller-manager", "kube-scheduler"])
def test_every_kubernetes_binary_maps_staging_to_the_same_published_version(
    tool: str, tmp_path: Path
) -> None:
    """kube-scheduler must come from the same k8s.io/* versions as the API server it talks to."""
    gomod = tmp_path / "go.mod"
    gomod.write_text("module k8s.io/kubernetes\n\nreplace k8s.io/api => ./staging/src/k8s.io/api\n")
    result = _bash(f'replace_lines {tool} "{gomod}"; tool_version {tool}', tmp_path)
    assert result.returncode == 0, result.stderr
    k8s = _pins()["KUBERNETES_VERSION"]
    minor = k8s.removeprefix("1.")
    assert result.stdout.splitlines() == [f"replace k8s.io/api => k8s.io/api v0.{minor}", k8s]


def test_kwok_is_built_from_its_pin_without_replaces(tmp_path: Path) -> None:
    gomod = tmp_path / "go.mod"
    gomod.write_text("module sigs.k8s.io/kwok\n\ngo 1.26.0\n\nrequire k8s.io/api v0.36.1\n")
    result = _bash(f'replace_lines kwok "{gomod}"; tool_version kwok; tool_path kwok', tmp_path)
    assert result.returncode == 0, result.stderr
    pin = _pins()["KWOK_VERSION"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", pin)
    assert result.stdout.splitlines() == [pin, str(tmp_path / "cache" / f"kwok-{pin}/bin/kwok")]


def test_replace_lines_for_etcd_map_the_v2_client_and_drop_the_forbidden_markers(
    tmp_path: Path,
) -> None:
    gomod = tmp_path / "go.mod"
    gomod.write_text(
        "module go.etcd.io/etcd/server/v3\n\n"
        "replace (\n"
        "\tgo.etcd.io/etcd/api/v3 => ../api\n"
        "\tgo.etcd.io/etcd/client/v2 => ../client/v2\n"
        ")\n\n"
        "replace (\n\tgo.etcd.io/etcd => ./FORBIDDEN_DEPENDENCY\n)\n"
    )
    result = _bash(f'replace_lines etcd "{gomod}"', tmp_path)
    assert result.returncode == 0, result.stderr
    etcd = _pins()["ETCD_GO_VERSION"]
    major, minor, patch = etcd.split(".")
    assert major == "3"
    assert result.stdout.splitlines() == [
        f"replace go.etcd.io/etcd/api/v3 => go.etcd.io/etcd/api/v3 v{etcd}",
        # the v2 client of etcd 3.5.x is published as v2.305.x
        f"replace go.etcd.io/etcd/client/v2 => go.etcd.io/etcd/client/v2 v2.30{minor}.{patch}",
    ]


def test_replace_lines_refuse_an_unmapped_local_replace(tmp_path: Path) -> None:
    gomod = tmp_path / "go.mod"
    gomod.write_text("module sigs.k8s.io/kueue\n\nreplace example.com/x => ../x\n")
    result = _bash(f'replace_lines kueue "{gomod}"', tmp_path)
    assert result.returncode != 0
    assert "no published stand-in" in result.stderr


def test_kubernetes_version_stamped_into_the_binaries(tmp_path: Path) -> None:
    result = _bash("kube_ldflags", tmp_path)
    assert result.returncode == 0, result.stderr
    k8s = _pins()["KUBERNETES_VERSION"]
    assert f"-X k8s.io/component-base/version.gitVersion=v{k8s}" in result.stdout
    assert f"-X k8s.io/client-go/pkg/version.gitVersion=v{k8s}" in result.stdout

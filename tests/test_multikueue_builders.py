"""MultiKueue builders: worker RBAC per Kueue version, kubeconfig Kueue accepts, object shapes."""

from __future__ import annotations

import base64
import ipaddress
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from builders import multikueue as mk
from testkit import crdschema
from testkit.shared.multikueue_builders import (
    CDGLW,
    QUOTA_AUTOMATION,
    READS,
    SCRIPT,
    SCRIPT_0_17_8,
    SCRIPT_0_19_2,
    expected_rules,
    split_rules,
)
from upstream import kueue_rbac as upstream_kueue
from upstream.k8s import dns_subdomain_problem
from upstream.kueue import KUEUE_API

KUEUE_VERSIONS = ["v0.17.8", "v0.19.2"]


FRAMEWORK_SETS = [
    [],
    ["batch/job"],
    ["batch/job", "pod"],
    ["batch/job", "ray.io/rayjob", "jobset.x-k8s.io/jobset"],
    sorted({fw for fw, *_ in SCRIPT_0_19_2 if fw}),
]


def test_tables_have_the_scripts_rule_counts() -> None:
    # 27 rules in the v0.17.8 script, 30 in v0.19.2 (counted in the files at the tags).
    assert [len(SCRIPT_0_17_8), len(SCRIPT_0_19_2)] == [27, 30]
    for version in KUEUE_VERSIONS:
        everything = sorted({fw for fw, *_ in SCRIPT[version] if fw} | {"pod"})
        rules = upstream_kueue.worker_rules(version, everything, {QUOTA_AUTOMATION: True})
        gates = (QUOTA_AUTOMATION,)
        assert len(rules) == len(expected_rules(version, everything, gates))


@pytest.mark.parametrize("version", KUEUE_VERSIONS)
def test_pods_only_with_the_pod_framework(version: str) -> None:
    # Cluster-wide pod create would let the manager's credential run a pod as any ServiceAccount.
    def pods(frameworks: list[str]) -> list[Any]:
        return [
            r for r in upstream_kueue.worker_rules(version, frameworks) if "pods" in r.resources
        ]

    assert pods(["batch/job"]) == []
    assert pods(["batch/job", "ray.io/rayjob"]) == []
    assert [r.verbs for r in pods(["batch/job", "pod"])] == [tuple(CDGLW)]


def test_batch_jobs_can_be_patched_for_elastic_jobs() -> None:
    jobs = [
        r for r in upstream_kueue.worker_rules("0.19.2", ["batch/job"]) if r.resources == ("jobs",)
    ]
    assert [set(r.verbs) for r in jobs] == [{*CDGLW, "update", "patch"}]
    # 0.17.8 has no elastic Jobs through MultiKueue: the script's verbs stay.
    old = [
        r for r in upstream_kueue.worker_rules("0.17.8", ["batch/job"]) if r.resources == ("jobs",)
    ]
    assert [list(r.verbs) for r in old] == [CDGLW]


def test_queue_reads_only_with_quota_automation() -> None:
    def reads(gates: dict[str, bool] | None) -> bool:
        rules = upstream_kueue.worker_rules("0.19.2", ["batch/job"], gates)
        return any("clusterqueues" in r.resources for r in rules)

    assert not reads(None)
    assert not reads({QUOTA_AUTOMATION: False})
    assert reads({QUOTA_AUTOMATION: True})
    role = mk.cluster_role("0.19.2", ["batch/job"], {QUOTA_AUTOMATION: True})
    expected = expected_rules("v0.19.2", ["batch/job"], (QUOTA_AUTOMATION,))
    assert role["rules"] == split_rules(expected, reads=True)
    writes = mk.write_role("0.19.2", ["batch/job"], {QUOTA_AUTOMATION: True})["rules"]
    assert not any("clusterqueues" in r["resources"] for r in writes)  # reads only


@pytest.mark.parametrize("version", KUEUE_VERSIONS)
@pytest.mark.parametrize("frameworks", FRAMEWORK_SETS, ids=lambda f: "+".join(f) or "none")
def test_cluster_role_is_the_scripts_rules_for_the_frameworks(
    version: str, frameworks: list[str]
) -> None:
    # The script's rules, cut in two: reads bound cluster-wide, writes per dispatched namespace.
    role = mk.cluster_role(version, frameworks)
    assert role["metadata"]["name"] == "multikueue-sa-role"
    assert role["rules"] == split_rules(expected_rules(version, frameworks), reads=True)
    write = mk.write_role(version, frameworks)
    assert write["metadata"]["name"] == "multikueue-sa-write"
    assert write["rules"] == split_rules(expected_rules(version, frameworks), reads=False)
    for rule in role["rules"]:
        assert set(rule["verbs"]) <= set(READS)
    for rule in write["rules"]:
        assert not set(rule["verbs"]) & set(READS)


def test_write_verbs_are_bound_only_in_dispatched_namespaces() -> None:
    fleet, manifests = rendered()
    bindings = [m for m in manifests if m.kind == "RoleBinding" and m.name == "multikueue-sa-write"]
    # BASE: both workers reached by `to-workers`, whose one LocalQueue is in team-a.
    assert [(m.target, m.obj["metadata"]["namespace"], m.needs) for m in bindings] == [
        ("worker-1", "team-a", ("Namespace/team-a",)),
        ("worker-2", "team-a", ("Namespace/team-a",)),
    ]
    for m in bindings:
        assert m.obj["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "multikueue-sa-write",
        }
        assert m.obj["subjects"] == [
            {"kind": "ServiceAccount", "name": "multikueue-sa", "namespace": "kueue-system"}
        ]
    # The only cluster-wide binding names the read role.
    crbs = [m.obj for m in manifests if m.kind == "ClusterRoleBinding"]
    assert {c["roleRef"]["name"] for c in crbs} == {"multikueue-sa-role"}
    del fleet


@pytest.mark.parametrize("version", KUEUE_VERSIONS)
def test_no_wildcards_and_no_secrets_anywhere(version: str) -> None:
    everything = sorted({fw for fw, *_ in SCRIPT[version] if fw})
    roles = [mk.cluster_role(version, [*everything, "pod"]), mk.write_role(version, everything)]
    for rule in [r for role in roles for r in role["rules"]]:
        for key in ("apiGroups", "resources", "verbs"):
            assert "*" not in rule[key]
        assert "secrets" not in rule["resources"]
        assert not {"escalate", "bind", "impersonate"} & set(rule["verbs"])
    binding = mk.cluster_role_binding()
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "multikueue-sa-role",
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "multikueue-sa", "namespace": "kueue-system"}
    ]


def test_version_spelling_and_unknown_versions() -> None:
    assert upstream_kueue.worker_rules("0.19.2", ["batch/job"]) == upstream_kueue.worker_rules(
        "v0.19.2", ["batch/job"]
    )
    with pytest.raises(ValueError, match=r"no MultiKueue worker RBAC table for Kueue v0\.18\.0"):
        upstream_kueue.worker_rules("0.18.0", [])


def test_frameworks_the_script_cannot_serve() -> None:
    # MultiKueue has adapters for these, but the script grants nothing for them.
    wanted = ["batch/job", "kubeflow.org/jaxjob", "trainer.kubeflow.org/trainjob", "deployment"]
    wanted += ["ray.io/rayservice", "pod"]
    assert upstream_kueue.frameworks_without_worker_rbac("v0.17.8", wanted) == [
        "kubeflow.org/jaxjob",
        "ray.io/rayservice",
        "trainer.kubeflow.org/trainjob",
    ]
    # v0.19.2: jaxjob is served by the adapter's own row (ADAPTER_RULES), not the script.
    assert upstream_kueue.frameworks_without_worker_rbac("v0.19.2", wanted) == [
        "trainer.kubeflow.org/trainjob",
    ]


def test_token_secret_is_named_by_rotation_and_waits_for_the_token() -> None:
    secret = mk.token_secret(3)
    assert secret["type"] == "kubernetes.io/service-account-token"
    meta = secret["metadata"]
    assert (meta["name"], meta["namespace"]) == ("multikueue-sa-token-3", "kueue-system")
    assert meta["annotations"] == {
        "kubernetes.io/service-account.name": "multikueue-sa",
        "pulumi.com/waitFor": "jsonpath={.data.token}",
    }
    assert "data" not in secret
    assert "stringData" not in secret
    assert mk.token_secret(4)["metadata"]["name"] != meta["name"]
    kinds = [o["kind"] for o in mk.worker_objects("v0.19.2", ["batch/job"], 0)]
    assert kinds == [
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "ClusterRole",
        "Role",
        "RoleBinding",
        "Secret",
    ]


# --------------------------------------------------------------------------------------------
# Kubeconfig

CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()
TOKEN = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2ln"
SERVER = "https://worker-1-abc123.hcp.westeurope.azmk8s.io:443"


def kueue_rejects(doc: dict[str, Any]) -> str | None:
    """Kueue v0.19.2 validateKubeconfig + validateRestConfig (multikueuecluster.go), in Python."""
    for user in doc.get("users") or []:
        u = user.get("user") or {}
        if u.get("tokenFile"):
            return "tokenFile is not allowed"
        if u.get("username") or u.get("password"):
            return "basic auth is not allowed"
        if u.get("exec"):
            return "exec plugins are not allowed"
        if u.get("auth-provider"):
            return "auth providers are not allowed"
    for cluster in doc.get("clusters") or []:
        c = cluster.get("cluster") or {}
        if c.get("insecure-skip-tls-verify"):
            return "insecure TLS verification is not allowed"
        if c.get("certificate-authority"):
            return "certificate-authority file paths are not allowed"
        if not c.get("server"):
            return "server URL is required"
        host = (urlsplit(c["server"]).hostname or "").lower()
        try:
            ipaddress.ip_address(host)
        except ValueError:
            if dns_subdomain_problem(host) is not None:
                return "untrusted server endpoint"
    return None


def test_worker_kubeconfig_has_inline_credentials_only() -> None:
    text = mk.worker_kubeconfig("worker-1", SERVER, CA, TOKEN)
    doc = yaml.safe_load(text)
    assert doc["apiVersion"] == "v1"
    assert doc["kind"] == "Config"
    assert doc["clusters"] == [
        {"name": "worker-1", "cluster": {"server": SERVER, "certificate-authority-data": CA}}
    ]
    assert doc["users"] == [{"name": "worker-1-multikueue-sa", "user": {"token": TOKEN}}]
    assert doc["contexts"] == [
        {"name": "worker-1", "context": {"cluster": "worker-1", "user": "worker-1-multikueue-sa"}}
    ]
    assert doc["current-context"] == "worker-1"
    assert kueue_rejects(doc) is None
    for word in ("exec", "tokenFile", "insecure", "certificate-authority:", "password"):
        assert word not in text


def test_the_kueue_check_used_above_catches_what_kueue_rejects() -> None:
    good = yaml.safe_load(mk.worker_kubeconfig("w", SERVER, CA, TOKEN))
    bad_user = {"exec": {"command": "kubelogin"}}
    assert kueue_rejects({**good, "users": [{"name": "u", "user": bad_user}]})
    bad_cluster = {"server": SERVER, "insecure-skip-tls-verify": True}
    assert kueue_rejects({**good, "clusters": [{"name": "w", "cluster": bad_cluster}]})


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_kubectl_accepts_the_kubeconfig(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(mk.worker_kubeconfig("worker-1", SERVER, CA, TOKEN))
    out = subprocess.run(
        ["kubectl", "config", "view", "--raw", "-o", "json", f"--kubeconfig={path}"],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    )
    view = json.loads(out.stdout)
    assert view["current-context"] == "worker-1"
    assert view["users"][0]["user"]["token"] == TOKEN
    assert view["clusters"][0]["cluster"]["certificate-authority-data"] == CA


@pytest.mark.parametrize(
    ("server", "ca", "token", "message"),
    [
        ("http://worker.example.com", CA, TOKEN, "must be an https:// URL"),
        ("https://", CA, TOKEN, "must be an https:// URL"),
        ("https://bad_host.example.com", CA, TOKEN, "not a DNS-1123 name"),
        (SERVER, CA, "", "token must be"),
        (SERVER, CA, "two words", "token must be"),
        (SERVER, "not base64!", TOKEN, "must be base64"),
        (SERVER, "", TOKEN, "must not be empty"),
    ],
)
def test_worker_kubeconfig_refuses_what_kueue_would(
    server: str, ca: str, token: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        mk.worker_kubeconfig("w", server, ca, token)


def test_ip_server_and_uppercase_fqdn_are_fine() -> None:
    mk.worker_kubeconfig("w", "https://10.0.0.1:6443", CA, TOKEN)
    mk.worker_kubeconfig("w", "https://Worker-ABC.hcp.westeurope.azmk8s.io:443", CA, TOKEN)


def test_redacted_kubeconfig_carries_no_credential() -> None:
    doc = yaml.safe_load(mk.redacted_kubeconfig("worker-1", SERVER))
    assert doc["users"][0]["user"] == {"token": "REDACTED"}
    ca = doc["clusters"][0]["cluster"]["certificate-authority-data"]
    assert base64.b64decode(ca) == b"REDACTED"


# --------------------------------------------------------------------------------------------
# Manager objects


def test_rotation_changes_the_multikueue_cluster_spec_not_just_its_metadata() -> None:
    """Only a spec change raises the object's generation, which makes `pulumi up` wait for
    Kueue's verdict on the new credential rather than accept the old Active condition."""
    before, after = mk.multikueue_cluster("worker-1", 0), mk.multikueue_cluster("worker-1", 1)
    assert before["spec"] != after["spec"]
    assert before["metadata"] == after["metadata"]
    location = after["spec"]["clusterSource"]["kubeConfig"]["location"]
    assert location == mk.kubeconfig_secret("worker-1", "x", 1)["metadata"]["name"]


def test_connect_timeout_is_the_wait_of_every_multikueue_cluster() -> None:
    objs = mk.manager_objects(
        [("w1", "x", 0), ("w2", "x", 4)], connect_timeout=45, configs=[("multikueue", ["w1", "w2"])]
    )
    waits = {
        o["metadata"]["name"]: o["metadata"]["annotations"]["pulumi.com/timeoutSeconds"]
        for o in objs
        if o["kind"] == "MultiKueueCluster"
    }
    assert waits == {"w1": "45", "w2": "45"}


def test_manager_objects_chain_secret_cluster_config_check() -> None:
    encoded = mk.encode("kubeconfig text")
    objs = mk.manager_objects(
        [("worker-1", encoded, 2), ("Worker_2", encoded, 0)],
        configs=[("multikueue", ["worker-1", "Worker_2"])],
    )
    assert [(o["kind"], o["metadata"]["name"]) for o in objs] == [
        ("Secret", "multikueue-worker-1-kubeconfig-2"),
        ("MultiKueueCluster", "worker-1"),
        ("Secret", "multikueue-worker-2-kubeconfig-0"),
        ("MultiKueueCluster", "worker-2"),
        ("MultiKueueConfig", "multikueue"),
    ]
    secret, cluster, _, _, config = objs
    check = mk.admission_check()
    assert secret["metadata"]["namespace"] == "kueue-system"
    assert secret["data"] == {"kubeconfig": encoded}
    assert "annotations" not in secret["metadata"]
    assert cluster["spec"] == {
        "clusterSource": {
            "kubeConfig": {"location": "multikueue-worker-1-kubeconfig-2", "locationType": "Secret"}
        }
    }
    assert cluster["metadata"]["annotations"] == {
        # The condition's value: Kueue v0.19.2 keeps an old observedGeneration after a good ->
        # good rotation, so condition=Active (which requires it current) would never hold.
        "pulumi.com/waitFor": 'jsonpath={.status.conditions[?(@.type=="Active")].status}=True',
        "pulumi.com/timeoutSeconds": "300",
    }
    assert config["spec"] == {"clusters": ["worker-1", "worker-2"]}
    assert check["spec"] == {
        "controllerName": "kueue.x-k8s.io/multikueue",
        "parameters": {
            "apiGroup": "kueue.x-k8s.io",
            "kind": "MultiKueueConfig",
            "name": "multikueue",
        },
    }
    assert check["metadata"]["annotations"] == {"pulumi.com/waitFor": "condition=Active"}


@pytest.mark.parametrize("count", [0, 21])
def test_multikueue_config_lists_1_to_20_workers(count: int) -> None:
    with pytest.raises(ValueError, match=r"1\.\.20 clusters"):
        mk.multikueue_config([f"w{i}" for i in range(count)])


@pytest.mark.parametrize("version", KUEUE_VERSIONS)
def test_manager_objects_pass_the_pinned_crd_schemas(version: str) -> None:
    workers = [(f"worker-{i}", mk.encode("x"), 0) for i in range(1, 21)]
    configs = [("multikueue", [w for w, _, _ in workers])]
    objects = [*mk.manager_objects(workers, configs=configs), mk.admission_check()]
    custom = [o for o in objects if o["apiVersion"] == KUEUE_API]
    assert {o["kind"] for o in custom} == {
        "MultiKueueCluster",
        "MultiKueueConfig",
        "AdmissionCheck",
    }
    for obj in custom:
        report = crdschema.validate(obj, "kueue", version)
        assert report.errors == [], str(report)


def test_schema_validation_catches_a_v1beta1_shaped_cluster() -> None:
    # v1beta1 put kubeConfig directly under spec; v1beta2 requires spec.clusterSource.
    obj = mk.multikueue_cluster("worker-1", 0)
    obj["spec"] = {"kubeConfig": obj["spec"]["clusterSource"]["kubeConfig"]}
    assert crdschema.validate(obj, "kueue", "v0.19.2").errors


# --------------------------------------------------------------------------------------------
# Offline render (what `preflight --render` writes)


def rendered() -> tuple[Any, list[Any]]:
    from checks.stack import parse_fleet  # noqa: PLC0415
    from testkit.shared.multikueue_config import BASE  # noqa: PLC0415

    fleet, _ = parse_fleet(BASE)
    return fleet, mk.render_multikueue(fleet)


def test_render_targets_each_side() -> None:
    _, manifests = rendered()
    by_target: dict[str, list[str]] = {}
    for m in manifests:
        by_target.setdefault(m.target, []).append(f"{m.kind}/{m.name}")
    worker_side = [
        "ServiceAccount/multikueue-sa",
        "ClusterRole/multikueue-sa-role",
        "ClusterRoleBinding/multikueue-sa-crb",
        "ClusterRole/multikueue-sa-write",
        "Role/multikueue-sa-whoami",
        "RoleBinding/multikueue-sa-whoami",
        "Secret/multikueue-sa-token-0",
        "RoleBinding/multikueue-sa-write",
    ]
    assert by_target == {
        "worker-1": worker_side,
        "worker-2": worker_side,
        "manager": [
            "Secret/multikueue-worker-1-kubeconfig-0",
            "MultiKueueCluster/worker-1",
            "Secret/multikueue-worker-2-kubeconfig-0",
            "MultiKueueCluster/worker-2",
            "MultiKueueConfig/multikueue",
        ],
    }


def test_render_never_holds_a_credential() -> None:
    _, manifests = rendered()
    secrets = [m.obj for m in manifests if m.kind == "Secret" and "data" in m.obj]
    assert len(secrets) == 2
    for secret in secrets:
        doc = yaml.safe_load(base64.b64decode(secret["data"]["kubeconfig"]))
        assert doc["users"][0]["user"] == {"token": "REDACTED"}
        server = doc["clusters"][0]["cluster"]["server"]
        assert server.startswith("https://worker-")
        assert "-redacted.hcp.westeurope.azmk8s.io" in server
        assert kueue_rejects(doc) is None
    token_secrets = [m.obj for m in manifests if m.name.startswith("multikueue-sa-token")]
    assert all("data" not in s and "stringData" not in s for s in token_secrets)


@pytest.mark.parametrize("version", ["0.17.8", "0.19.2"])
def test_rendered_fleet_objects_pass_the_crd_schemas(version: str) -> None:
    """MultiKueue objects and the Kueue objects as deployed (mirrored queues, extra check)."""
    from checks.stack import parse_fleet  # noqa: PLC0415
    from config.resolve import multikueue_checks, with_mirrored_queues  # noqa: PLC0415
    from testkit.fleetvalues import render_kueue  # noqa: PLC0415
    from testkit.shared.multikueue_config import BASE  # noqa: PLC0415

    # Each Kueue on a minor it is tested on (checks.upgrades): 0.17 up to 1.35.
    minor = "1.35" if version == "0.17.8" else "1.36"
    fleet, _ = parse_fleet({**BASE, "kueue": {"version": version}, "kubernetesVersion": minor})
    manifests = [
        *mk.render_multikueue(fleet),
        *render_kueue(with_mirrored_queues(fleet), multikueue_checks(fleet)),
    ]
    custom = [m for m in manifests if m.obj["apiVersion"].startswith("kueue.x-k8s.io/")]
    for m in custom:
        report = crdschema.validate(m.obj, "kueue", f"v{version}")
        assert report.errors == [], str(report)
    manager_cq = next(m.obj for m in custom if m.target == "manager" and m.kind == "ClusterQueue")
    assert manager_cq["spec"]["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": "multikueue"}]
    }
    mirrored = sorted(
        (m.target, m.obj["metadata"]["namespace"], m.name, m.obj["spec"]["clusterQueue"])
        for m in custom
        if m.kind == "LocalQueue"
    )
    assert mirrored == [
        ("manager", "team-a", "team-a", "to-workers"),
        ("worker-1", "team-a", "team-a", "batch"),
        ("worker-2", "team-a", "team-a", "batch"),
    ]
    namespaces = sorted((m.target, m.name) for m in manifests if m.kind == "Namespace")
    assert namespaces == [("manager", "team-a"), ("worker-1", "team-a"), ("worker-2", "team-a")]

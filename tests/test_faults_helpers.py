"""Offline checks of the pure helpers of the deploy-fault tests (testkit/realtier/pulumi_cli.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from pulumi.automation import OpType

from testkit.realtier.pulumi_cli import (
    OPERATIONS,
    ObjectRef,
    PulumiCli,
    children,
    credential_refs,
    diff_lines,
    kubectl_kinds,
    object_refs,
    op_counts,
    section,
    shell_commands,
)

ROOT = Path(__file__).resolve().parent.parent
RECOVERY = "### A `pulumi up` killed halfway"

DOC = """# Title

## When things go wrong

intro

### A `pulumi up` killed halfway

text

```sh
pulumi stack export --file keep.json  # keep it
# a comment line

pulumi cancel --yes
```

## Next
```sh
pulumi destroy --yes
```
"""


def test_section_ends_at_the_next_heading_of_its_level_or_higher() -> None:
    body = section(DOC, "### A `pulumi up` killed halfway")
    assert "pulumi cancel --yes" in body
    assert "## Next" not in body
    assert "destroy" not in body


def test_a_hash_inside_a_code_block_is_not_a_heading() -> None:
    doc = "## A\n```sh\n# comment\n## not a heading\necho x\n```\n## B\n"
    assert "echo x" in section(doc, "## A")


def test_a_missing_section_or_block_is_an_error() -> None:
    with pytest.raises(ValueError, match="no section"):
        section(DOC, "### Absent")
    with pytest.raises(ValueError, match="no ```sh block"):
        shell_commands("no block here")


def test_shell_commands_drop_comments_and_blank_lines() -> None:
    assert shell_commands(section(DOC, "### A `pulumi up` killed halfway")) == [
        ["pulumi", "stack", "export", "--file", "keep.json"],
        ["pulumi", "cancel", "--yes"],
    ]


def test_the_documented_recovery_keeps_the_state_then_unlocks_refreshes_and_converges() -> None:
    """What the real-tier test runs is the operations page's block: its order is the advice."""
    commands = shell_commands(section(OPERATIONS.read_text(), RECOVERY))
    assert [argv[1] for argv in commands] == ["stack", "cancel", "refresh", "up"], commands
    assert "--file" in commands[0]
    assert "--clear-pending-creates" in commands[2]
    # Non-interactive: every state-changing step says --yes (CI has no terminal to answer).
    assert all("--yes" in argv for argv in commands[1:])


def test_object_refs_keep_identity_and_owners_only() -> None:
    items = [
        {
            "kind": "Secret",
            "metadata": {
                "name": "t",
                "namespace": "kueue-system",
                "uid": "1",
                "resourceVersion": "9",
                "ownerReferences": [
                    {"kind": "ServiceAccount", "name": "b"},
                    {"kind": "X", "name": "a"},
                ],
            },
        },
        {"kind": "Namespace", "metadata": {"name": "team-a", "uid": "2"}},
    ]
    assert object_refs(items) == {
        ObjectRef("Secret", "kueue-system", "t", ("ServiceAccount/b", "X/a")),
        ObjectRef("Namespace", "", "team-a", ()),
    }


def test_diff_lines_name_missing_and_extra_objects() -> None:
    a = ObjectRef("Namespace", "", "a", ())
    b = ObjectRef("Secret", "ns", "b", ("ServiceAccount/s",))
    c = ObjectRef("Secret", "ns", "c", ())
    assert diff_lines([a, b], [a, b]) == []
    assert diff_lines([a, b], [a, c]) == [
        "- Secret ns/b (owned by ServiceAccount/s)",
        "+ Secret ns/c",
    ]


def test_kubectl_kinds_from_pulumi_types() -> None:
    assert kubectl_kinds(
        [
            "kubernetes:core/v1:Secret",
            "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue",
            "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole",
            "pulumi:providers:kubernetes",
            "aks-batch-fleet:index:Fleet",
        ]
    ) == [
        "ClusterQueue.v1beta2.kueue.x-k8s.io",
        "ClusterRole.v1.rbac.authorization.k8s.io",
        "Secret",
    ]


def test_credentials_are_token_secrets_by_type_and_kubeconfig_secrets_by_name() -> None:
    token = ObjectRef("Secret", "kueue-system", "multikueue-sa-token-0", ())
    kubeconfig = ObjectRef("Secret", "kueue-system", "multikueue-worker-1-kubeconfig-0", ())
    other = ObjectRef("Secret", "kueue-system", "webhook-certs", ())
    not_secret = ObjectRef("ConfigMap", "kueue-system", "kubeconfig-notes", ())
    refs = [token, kubeconfig, other, not_secret]
    assert credential_refs(refs, ["kueue-system/multikueue-sa-token-0"]) == [token, kubeconfig]
    assert credential_refs(refs, []) == [kubeconfig]


def test_op_counts_accept_enum_or_plain_keys() -> None:
    assert op_counts({OpType.UPDATE: 3, "same": 2}) == {"update": 3, "same": 2}
    assert op_counts(None) == {}


def test_children_reads_the_parent_pid_from_stat_even_with_odd_names(tmp_path: Path) -> None:
    for pid, comm, ppid in [(10, "pulumi", 1), (11, "a) b (c", 10), (12, "x", 10), (13, "y", 2)]:
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(f"{pid} ({comm}) S {ppid} 0 0\n")
    (tmp_path / "self").mkdir()
    assert children(10, tmp_path) == [11, 12]
    # And on the real /proc: a process of our own is our child, and it has none. The test
    # process itself may have others (the real tier's planes), so only membership is asserted.
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        assert sleeper.pid in children(os.getpid())
        assert children(sleeper.pid) == []
    finally:
        sleeper.kill()
        sleeper.wait()


def test_the_cli_runs_only_pulumi_commands(tmp_path: Path) -> None:
    cli = PulumiCli(Path("/bin/echo"), tmp_path, {})
    with pytest.raises(ValueError, match="not a pulumi command"):
        cli.run(["rm", "-rf", "x"])
    done = cli.run(["pulumi", "cancel", "--yes"])
    assert done.stdout == "cancel --yes\n"

"""Composition root: load and validate the stack config, build the Fleet, export outputs."""

import environment

# First: a `python __main__.py` without the project's packages gets the commands to run instead
# of a traceback (tests/test_environment.py holds this the program's first statement).
environment.require("__main__.py", instead=environment.PROGRAM)

from pathlib import Path

import pulumi
from pulumi.runtime.settings import get_monitor

import constants as c
from checks.stack import kubeconfig_issue, parse_fleet, read_files, stack_collisions, with_lines
from components.aks import AksCluster
from components.fleet import Fleet, FleetArgs
from config import login, yamlsafe
from config.errors import ConfigError, Issue, key_path
from config.loader import (
    FULL_KEY,
    read_stack_config,
    secret_chart_values,
    secret_issues,
    secure_paths,
    with_default_location,
)

ROOT = Path(__file__).parent

if get_monitor() is None:
    # Run by a Python of the environment but not by the Pulumi CLI: no stack and no config.
    raise SystemExit(environment.not_under_pulumi())


def secret_locations(stack: str) -> list[tuple[str | int, ...]]:
    """Where the fleet key's `secure:` values stand, from the stack file the CLI read.

    The engine marks the fleet key secret as a whole; only the file says which leaves are.
    """
    found = read_stack_config(stack, ROOT)
    paths = secure_paths(found[0].get(FULL_KEY)) if found else []
    if not paths:
        # Config from elsewhere (--config-file, an ESC environment): refuse rather than guess.
        raise ConfigError(
            [Issue(FULL_KEY, f"holds a secret, but Pulumi.{stack}.yaml does not say where")]
        )
    return paths


def existing_secret_kubeconfigs(
    clusters: list[tuple[int, str, str, str | None]],
) -> dict[str, pulumi.Input[str]]:
    """Kubeconfigs in secret config keys: checked now (with key paths), carried as secrets."""
    found: dict[str, pulumi.Input[str]] = {}
    issues: list[Issue] = []
    for i, name, key, context in clusters:
        at = key_path("clusters", i, "existing", "kubeconfigSecret")
        # Read as text only to check it; the program passes on the secret Output.
        document = pulumi.Config().get(key)
        if document is None:
            issues.append(Issue(at, f"the stack has no config key {key!r}"))
            continue
        problem = kubeconfig_issue(document, context, at)
        if problem:
            issues.append(problem)
            continue
        found[name] = pulumi.Config().require_secret(key)
    if issues:
        raise ConfigError(issues)
    return found


def _azure_native_config() -> dict[str, str]:
    """The azure-native credential keys set on this stack (a secret as "set": presence counts)."""
    found: dict[str, str] = {}
    for key in ("clientId", "clientSecret", "clientCertPath", "useOidc", "useMsi"):
        value = pulumi.runtime.get_config(f"azure-native:{key}")
        if value is not None:
            found[key] = "set" if key == "clientSecret" else value
    return found


try:
    try:
        raw = pulumi.Config(c.PROJECT).get_object(c.CONFIG_KEY)
        yamlsafe.check_data(raw, name=FULL_KEY)
    except yamlsafe.YamlError as exc:
        raise ConfigError([Issue(FULL_KEY, str(exc).removeprefix(f"{FULL_KEY} "))]) from None
    except (pulumi.ConfigTypeError, ValueError, RecursionError):
        # Not the SDK's message: it quotes the value, which may be a decrypted secret.
        raise ConfigError([Issue(FULL_KEY, "unreadable: not a JSON object")]) from None
    if raw is None:
        raise ConfigError([Issue(FULL_KEY, "required: the stack config has no fleet")])
    stack = pulumi.get_stack()
    secrets = secret_locations(stack) if pulumi.runtime.is_config_secret(FULL_KEY) else []
    refused = secret_issues(secrets)
    if refused:
        raise ConfigError(refused, f"stack {stack}")
    location = pulumi.Config("azure-native").get("location")
    fleet_config, warnings = parse_fleet(
        with_default_location(raw, location), source=f"stack {stack}"
    )
    files = read_files(fleet_config, ROOT, source=f"stack {stack}")
    shared = stack_collisions(stack, fleet_config, ROOT)
    if shared:
        raise ConfigError(shared, f"stack {stack}")
    # Clusters the stack does not create: kubeconfigs from files or secret config keys, read
    # here so that components never read config or files.
    existing: dict[str, pulumi.Input[str]] = {
        name: pulumi.Output.secret(text) for name, text in files.kubeconfigs.items()
    }
    existing |= existing_secret_kubeconfigs(
        [
            (i, cl.name, cl.existing.kubeconfig_secret, cl.existing.context)
            for i, cl in enumerate(fleet_config.clusters)
            if cl.existing is not None and cl.existing.kubeconfig_secret
        ]
    )
    # An existing Karmada control plane (`karmada.source: existing`): its kubeconfig, likewise.
    karmada_kubeconfig: pulumi.Input[str] | None = None
    karmada_source = fleet_config.karmada.existing if fleet_config.karmada else None
    if files.karmada_kubeconfig is not None:
        karmada_kubeconfig = pulumi.Output.secret(files.karmada_kubeconfig)
    elif karmada_source is not None and karmada_source.kubeconfig_secret:
        karmada_kubeconfig = pulumi.Config().require_secret(karmada_source.kubeconfig_secret)
except ConfigError as err:
    # A clean, complete message and no resources: nothing is registered before this point.
    raise pulumi.RunError(str(with_lines(err, pulumi.get_stack(), ROOT))) from None
for warning in warnings:
    pulumi.log.warn(str(warning))
# The deploying identity's principal type, for its role assignments (ARM refuses a mismatch).
deployer = login.resolve(
    fleet_config.deployer_principal_type,
    login.detect(provider_config=_azure_native_config()),
)
pulumi.log.info(
    f"deployer role assignments: principalType {deployer.principal_type} ({deployer.reason})"
)

fleet = Fleet(
    c.PROJECT,
    FleetArgs(
        config=fleet_config,
        stack=pulumi.get_stack(),
        existing_kubeconfigs=existing,
        kueue_crd_files=files.crd_files,
        kueue_values_secret=secret_chart_values(secrets),
        karmada_kubeconfig=karmada_kubeconfig,
        kruise_crd_files=files.kruise_crd_files,
        deployer_principal_type=deployer.principal_type,
        operator_crd_files=files.operator_crd_files,
        training_operator_overlay=files.training_operator_overlay,
    ),
)

pulumi.export(c.OUT_RESOURCE_GROUP, fleet.resource_group_name)
pulumi.export(c.OUT_KUBECONFIGS, fleet.kubeconfigs)
pulumi.export(c.OUT_CLUSTER_NAMES, {n: k.cluster_name for n, k in fleet.clusters.items()})
pulumi.export(c.OUT_API_SERVERS, {n: k.fqdn for n, k in fleet.clusters.items()})
pulumi.export(
    c.OUT_OIDC_ISSUERS,
    {n: k.oidc_issuer_url for n, k in fleet.clusters.items() if isinstance(k, AksCluster)},
)
pulumi.export(
    c.OUT_QUEUES,
    {
        n: {"clusterQueues": k.cluster_queues, "localQueues": k.local_queues}
        for n, k in fleet.kueues.items()
    },
)
# Only for a control plane the stack installs: an existing one's kubeconfig is the user's already,
# and exporting it would copy an admin credential into the stack's outputs.
if fleet.karmada is not None and fleet.karmada.release is not None:
    pulumi.export(c.OUT_KARMADA_KUBECONFIG, fleet.karmada.karmada_kubeconfig)

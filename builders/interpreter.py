"""Karmada ResourceInterpreterCustomization for OpenKruise UnitedDeployment, from our Lua scripts.

Karmada v1.18.2 looks each operation up separately: RIC objects first, then its built-in
third-party scripts. The built-in UnitedDeployment ones read the pod template from spec.template
(the workload wrapper) and availableReplicas (not a UnitedDeployment status field), so this RIC
defines every operation the built-in does and nothing falls through to it. The scripts live in
lua/uniteddeployment/, one file per operation, and run on Karmada's gopher-lua (Lua 5.1).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from upstream.k8s import dns_subdomain_problem

LUA_DIR: Final = Path(__file__).resolve().parent / "lua" / "uniteddeployment"
API_VERSION: Final = "config.karmada.io/v1alpha1"
KIND: Final = "ResourceInterpreterCustomization"
TARGET: Final = {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment"}
DEFAULT_NAME: Final = "kruise-uniteddeployment"

# spec.customizations key -> (script file, global function Karmada calls in it); names from
# pkg/resourceinterpreter/customized/declarative/luavm/lua.go at v1.18.2.
CUSTOMIZATIONS: Final[dict[str, tuple[str, str]]] = {
    "replicaResource": ("get_replicas.lua", "GetReplicas"),
    "replicaRevision": ("revise_replica.lua", "ReviseReplica"),
    "statusReflection": ("reflect_status.lua", "ReflectStatus"),
    "statusAggregation": ("aggregate_status.lua", "AggregateStatus"),
    "healthInterpretation": ("interpret_health.lua", "InterpretHealth"),
    "dependencyInterpretation": ("get_dependencies.lua", "GetDependencies"),
}


# Karmada runs each luaScript on its own (no require of our files): shared local helpers are
# prepended to the scripts that use them.
PRELUDES: Final[dict[str, tuple[str, ...]]] = {
    "get_replicas.lua": ("pod_template.lua",),
    "get_dependencies.lua": ("pod_template.lua",),
}


def lua_script(file_name: str) -> str:
    """The full text Karmada gets for one operation: its helpers, then the script."""
    parts = [*PRELUDES.get(file_name, ()), file_name]
    return "\n".join((LUA_DIR / part).read_text(encoding="utf-8") for part in parts)


def united_deployment_interpreter(name: str = DEFAULT_NAME) -> dict[str, Any]:
    """The cluster-scoped RIC object to apply to karmada-apiserver."""
    problem = dns_subdomain_problem(name)
    if problem:
        raise ValueError(f"RIC name: {problem}")
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name},
        "spec": {
            "target": dict(TARGET),
            "customizations": {
                key: {"luaScript": lua_script(file_name)}
                for key, (file_name, _function) in CUSTOMIZATIONS.items()
            },
        },
    }

"""Test double of Karmada's Lua interpreter VM, for running our ResourceInterpreterCustomization.

Follows Karmada v1.18.2 (pkg/resourceinterpreter/customized/declarative/luavm/{lua.go,kube.go,
lua_convert.go}, pkg/util/helper/{binding.go,pod.go}, pkg/util/resource.go,
pkg/util/lifted/visitpod.go) on a real Lua 5.1 (lupa.lua51; Karmada runs gopher-lua, a Lua 5.1):

- the sandbox: only package (preload loader), base, table, string (no gmatch), math and
  os.time/os.date; collectgarbage, dofile, getfenv, getmetatable, load, loadfile, loadstring,
  rawequal, rawget, rawset, setfenv, setmetatable, module and newproxy raise errors;
- values cross as JSON does (objects -> tables, null -> nil) and come back through gopher-json's
  encoder (an empty table is `[]`, a table used twice is an error) and convertEmptySliceToEmpty-
  StructPartly (empty tables become `{}` where a reference object had `{}`, else are dropped);
- the `kube` module: accuratePodRequirements, getPodDependencies, resourceAdd, getResourceQuantity.
  Go iterates sets when it lists dependencies, so their order is not defined; this double sorts.

With `strict` (the default) the script runs with a metatable on _G that fails any read of an
undefined global and any new global except the one function Karmada calls.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from lupa import lua51

# --- resource.Quantity (k8s.io/apimachinery), just what Karmada's helpers use ---------------------

_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {exp: suffix for suffix, exp in _DECIMAL.items()}
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))([eE][+-]?[0-9]+|[a-zA-Z]*)")


class Quantity:
    """A parsed quantity: exact value and the format String() uses."""

    def __init__(self, value: Fraction, fmt: str) -> None:
        self.value = value
        self.fmt = fmt

    @classmethod
    def parse(cls, text: str) -> Quantity:
        match = _QUANTITY.fullmatch(text.strip())
        if match is None:
            raise ValueError(f"quantities must match the regular expression: {text!r}")
        number, suffix = Fraction(match.group(1)), match.group(2)
        if suffix in _BINARY:
            return cls(number * 2 ** _BINARY[suffix], "BinarySI")
        if suffix in _DECIMAL:
            return cls(number * Fraction(10) ** _DECIMAL[suffix], "DecimalSI")
        if suffix[:1] in ("e", "E"):
            return cls(number * Fraction(10) ** int(suffix[1:]), "DecimalExponent")
        raise ValueError(f"unable to parse quantity's suffix: {text!r}")

    def value_int(self) -> int:
        """Value(): rounded up to an integer."""
        return math.ceil(self.value)

    def milli_value(self) -> int:
        """MilliValue(): thousandths, rounded up."""
        return math.ceil(self.value * 1000)

    def __str__(self) -> str:
        return format_quantity(self.value, self.fmt)


def format_quantity(value: Fraction, fmt: str) -> str:
    """Quantity.String(): canonical form in the quantity's format (CanonicalizeBytes)."""
    if value == 0:
        return "0"
    if fmt == "BinarySI" and abs(value) >= 1024 and value.denominator == 1:
        amount, exponent = int(value), 0
        while amount % 1024 == 0:
            amount //= 1024
            exponent += 10
        suffix = next((s for s, e in _BINARY.items() if e == exponent), "")
        return f"{amount}{suffix}"
    scale = 0
    while (value * Fraction(10) ** scale).denominator != 1:
        scale += 1
    mantissa, exponent = int(value * Fraction(10) ** scale), -scale
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    remainder = int(math.fmod(exponent, 3))  # Go's % truncates toward zero
    if remainder in (1, -2):
        mantissa, exponent = mantissa * 10, exponent - 1
    elif remainder in (2, -1):
        mantissa, exponent = mantissa * 100, exponent - 2
    if fmt == "DecimalExponent":
        return f"{mantissa}" if exponent == 0 else f"{mantissa}e{exponent}"
    return f"{mantissa}{_DECIMAL_SUFFIX.get(exponent, '')}"


def _quantity_arg(value: Any) -> Quantity:
    if isinstance(value, Quantity):
        return value
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise TypeError(f"bad quantity {value!r}")
    return Quantity.parse(str(value))


# --- util.Resource / helper.GenerateReplicaRequirements -------------------------------------------

_QUALIFIED_NAME = re.compile(
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
)


def _is_scalar_resource(name: str) -> bool:
    """lifted.IsScalarResourceName: extended, hugepages-, *kubernetes.io/*, attachable-volumes-."""
    prefixed_native = "kubernetes.io/" in name
    if name.startswith(("hugepages-", "attachable-volumes-")) or prefixed_native:
        return True
    native = "/" not in name
    return (
        not native
        and not name.startswith("requests.")
        and bool(_QUALIFIED_NAME.fullmatch("requests." + name))
    )


class _Resource:
    """util.Resource: milli-CPU, bytes and counts as int64."""

    def __init__(self) -> None:
        self.values: dict[str, int] = {}

    @staticmethod
    def _amount(name: str, quantity: Quantity) -> int | None:
        if name == "cpu":
            return quantity.milli_value()
        if name in ("memory", "pods", "ephemeral-storage") or _is_scalar_resource(name):
            return quantity.value_int()
        return None

    def add(self, resources: Mapping[str, Any]) -> None:
        for name, raw in resources.items():
            amount = self._amount(name, _quantity_arg(raw))
            if amount is not None:
                self.values[name] = self.values.get(name, 0) + amount

    def set_max(self, resources: Mapping[str, Any]) -> None:
        for name, raw in resources.items():
            amount = self._amount(name, _quantity_arg(raw))
            if amount is not None and amount > self.values.get(name, 0):
                self.values[name] = amount

    def resource_list(self) -> dict[str, str] | None:
        result: dict[str, str] = {}
        for name, amount in self.values.items():
            if amount <= 0:
                continue
            if name == "cpu":
                result[name] = format_quantity(Fraction(amount, 1000), "DecimalSI")
            elif name in ("memory", "ephemeral-storage") or name.startswith("hugepages-"):
                result[name] = format_quantity(Fraction(amount), "BinarySI")
            else:
                result[name] = format_quantity(Fraction(amount), "DecimalSI")
        return result or None


def _requests(container: Mapping[str, Any]) -> dict[str, Any]:
    """Requests, defaulted from limits where a request is missing (AddPodTemplateRequest)."""
    resources = container.get("resources") or {}
    requests = dict(resources.get("requests") or {})
    for name, value in (resources.get("limits") or {}).items():
        requests.setdefault(name, value)
    return requests


def _pod_requests(spec: Mapping[str, Any]) -> dict[str, str] | None:
    total = _Resource()
    for container in spec.get("containers") or []:
        total.add(_requests(container))
    for container in spec.get("initContainers") or []:
        total.set_max(_requests(container))
    if spec.get("overhead"):
        total.add(spec["overhead"])
    return total.resource_list()


def _toleration(raw: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("key", "operator", "value", "effect", "tolerationSeconds")
    return {k: raw[k] for k in keys if raw.get(k) not in (None, "")}


def _node_selector(raw: Mapping[str, Any]) -> dict[str, Any]:
    """corev1.NodeSelector as encoding/json writes it (nodeSelectorTerms is not omitempty)."""
    terms: list[dict[str, Any]] = []
    for term in raw.get("nodeSelectorTerms") or []:
        out: dict[str, Any] = {}
        for field in ("matchExpressions", "matchFields"):
            requirements = [
                {k: r[k] for k in ("key", "operator", "values") if r.get(k) not in (None, "")}
                for r in term.get(field) or []
            ]
            if requirements:
                out[field] = requirements
        terms.append(out)
    return {"nodeSelectorTerms": terms or None}


def generate_replica_requirements(template: Mapping[str, Any]) -> dict[str, Any] | None:
    """helper.GenerateReplicaRequirements (ResourceQuotaEstimate gate off: no priorityClassName)."""
    spec = template.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise TypeError("spec of a PodTemplateSpec must be an object")
    claim: dict[str, Any] = {}
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if required is not None:
        claim["hardNodeAffinity"] = _node_selector(required)
    if spec.get("nodeSelector") is not None:
        claim["nodeSelector"] = dict(spec["nodeSelector"])
    if spec.get("tolerations"):
        claim["tolerations"] = [_toleration(t) for t in spec["tolerations"]]
    requests = _pod_requests(spec)
    if not claim and requests is None:
        return None
    requirements: dict[str, Any] = {}
    if claim:
        requirements["nodeClaim"] = claim
    if requests is not None:
        requirements["resourceRequest"] = requests
    return requirements


# --- helper.GetDependenciesFromPodTemplate --------------------------------------------------------

_SECRET_VOLUMES = (  # VisitPodSecretNames: volume source -> where its secret name is
    ("azureFile", ("secretName",)),
    ("cephfs", ("secretRef", "name")),
    ("cinder", ("secretRef", "name")),
    ("flexVolume", ("secretRef", "name")),
    ("projected", None),
    ("rbd", ("secretRef", "name")),
    ("secret", ("secretName",)),
    ("scaleIO", ("secretRef", "name")),
    ("iscsi", ("secretRef", "name")),
    ("storageos", ("secretRef", "name")),
    ("csi", ("nodePublishSecretRef", "name")),
)


def _dig(value: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _containers(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [
        *(spec.get("initContainers") or []),
        *(spec.get("containers") or []),
        *(spec.get("ephemeralContainers") or []),
    ]


def pod_dependencies(template: Mapping[str, Any], namespace: str) -> list[dict[str, Any]] | None:
    """ConfigMaps, Secrets, ServiceAccount and PVCs a pod template references; None if none."""
    spec = template.get("spec") or {}
    configmaps: set[str] = set()
    secrets: set[str] = {ref.get("name", "") for ref in spec.get("imagePullSecrets") or []}
    for container in _containers(spec):
        for source in container.get("envFrom") or []:
            configmaps.add(_dig(source, ("configMapRef", "name")) or "")
            secrets.add(_dig(source, ("secretRef", "name")) or "")
        for env in container.get("env") or []:
            configmaps.add(_dig(env, ("valueFrom", "configMapKeyRef", "name")) or "")
            secrets.add(_dig(env, ("valueFrom", "secretKeyRef", "name")) or "")
    pvcs: set[str] = set()
    for volume in spec.get("volumes") or []:
        projected = volume.get("projected")
        if projected is not None:
            for source in projected.get("sources") or []:
                configmaps.add(_dig(source, ("configMap", "name")) or "")
        elif volume.get("configMap") is not None:
            configmaps.add(volume["configMap"].get("name", ""))
        for source_name, path in _SECRET_VOLUMES:  # Go's switch: the first source present wins
            if volume.get(source_name) is None:
                continue
            if path is None:
                for source in volume[source_name].get("sources") or []:
                    secrets.add(_dig(source, ("secret", "name")) or "")
            else:
                secrets.add(_dig(volume[source_name], path) or "")
            break
        pvcs.add(_dig(volume, ("persistentVolumeClaim", "claimName")) or "")
    accounts = {spec.get("serviceAccountName") or ""} - {"default"}
    refs: list[dict[str, Any]] = []
    for kind, names in (
        ("ConfigMap", configmaps),
        ("Secret", secrets),
        ("ServiceAccount", accounts),
        ("PersistentVolumeClaim", pvcs),
    ):
        for name in sorted(names - {""}):
            ref = {"apiVersion": "v1", "kind": kind, "namespace": namespace, "name": name}
            refs.append({k: v for k, v in ref.items() if v})
    return refs or None


# --- gopher-json / lua_convert.go -----------------------------------------------------------------


class LuaConversionError(Exception):
    """What Karmada reports when a Lua result cannot be encoded or decoded."""


_DELETE = object()


def _escape(key: str) -> str:
    return key.replace(".", "\\.").replace(":", "\\:")


def _empty_fields(value: Any, path: tuple[str, ...], slices: set[str], structs: set[str]) -> None:
    items = enumerate(value) if isinstance(value, list) else value.items()
    for key, child in items:
        here = path if isinstance(value, list) else (*path, _escape(str(key)))
        if isinstance(child, list) and not child:
            slices.add(".".join(here))
        elif isinstance(child, dict) and not child:
            structs.add(".".join(here))
        elif isinstance(child, (list, dict)):
            _empty_fields(child, here, slices, structs)


def _fix_empty(value: Any, path: tuple[str, ...], slices: set[str], structs: set[str]) -> Any:
    if isinstance(value, list) and not value:
        key = ".".join(path)
        if key in structs:
            return {}
        return value if key in slices else _DELETE
    if isinstance(value, dict):
        fixed = {k: _fix_empty(v, (*path, _escape(k)), slices, structs) for k, v in value.items()}
        return {k: v for k, v in fixed.items() if v is not _DELETE}
    if isinstance(value, list):
        fixed_items = [_fix_empty(v, path, slices, structs) for v in value]
        return [v for v in fixed_items if v is not _DELETE]
    return value


def convert_empty(value: Any, is_struct: bool, references: tuple[Any, ...] = ()) -> Any:
    """convertEmptySliceToEmptyStructPartly."""
    if value == []:
        return {} if is_struct else []
    slices: set[str] = set()
    structs: set[str] = set()
    for reference in references:
        if isinstance(reference, (dict, list)):
            _empty_fields(reference, (), slices, structs)
    if not isinstance(value, (dict, list)):
        return value
    items = enumerate(value) if isinstance(value, list) else value.items()
    out: Any = [] if isinstance(value, list) else {}
    for key, child in items:
        here = () if isinstance(value, list) else (_escape(str(key)),)
        fixed = _fix_empty(child, here, slices, structs)
        if fixed is _DELETE:
            continue
        if isinstance(out, list):
            out.append(fixed)
        else:
            out[key] = fixed
    return out


# --- the VM ---------------------------------------------------------------------------------------

_SANDBOX = """
return function(kube, allowed)
  io, coroutine, python = nil, nil, nil  -- debug stays: lupa reads debug.traceback on errors
  os = { time = os.time, date = os.date }
  string.gmatch = nil
  package.loaders = { package.loaders[1] }
  package.preload.kube = function() return kube end
  local setmt, rawset_, error_, tostring_ = setmetatable, rawset, error, tostring
  for _, name in ipairs({ "collectgarbage", "dofile", "getfenv", "getmetatable", "load",
      "loadfile", "loadstring", "rawequal", "rawget", "rawset", "setfenv", "setmetatable",
      "module", "newproxy" }) do
    _G[name] = function()
      error_("call function " .. name
        .. " is not supported in karmada customized resourceinterpreter.")
    end
  end
  if allowed ~= nil then
    setmt(_G, {
      __newindex = function(t, k, v)
        if k ~= allowed then
          error_("assignment to undeclared global '" .. tostring_(k) .. "'", 2)
        end
        rawset_(t, k, v)
      end,
      __index = function(_, k)
        error_("read of undeclared global '" .. tostring_(k) .. "'", 2)
      end,
    })
  end
end
"""


class LuaVM:
    """One Lua state set up like Karmada's luavm.VM, with one script loaded (DoString)."""

    def __init__(self, script: str, function: str, *, strict: bool = True) -> None:
        self.lua = lua51.LuaRuntime(unpack_returned_tuples=True)
        # Captured before the sandbox replaces rawget; tostring gives a table's identity.
        self._identity: Any = self.lua.eval("function(t) return tostring(t) end")
        self._raw_get: Any = self.lua.eval("rawget")
        kube = self.to_lua(
            {
                "accuratePodRequirements": self._accurate_pod_requirements,
                "getPodDependencies": self._get_pod_dependencies,
                "resourceAdd": self._resource_add,
                "getResourceQuantity": self._get_resource_quantity,
            }
        )
        sandbox: Any = self.lua.execute(_SANDBOX)
        sandbox(kube, function if strict else None)
        self.function = function
        self.lua.execute(script)
        found = self._raw_get(self.lua.globals(), function)
        if found is None:
            raise LuaConversionError(f"not found function {function}")
        if lua51.lua_type(found) != "function":
            raise LuaConversionError(f"{function} is not a function: {lua51.lua_type(found)}")
        self._fn = found

    def global_names(self) -> set[str]:
        """Names in _G (lupa iterates with lua_next, so the strict metatable is not involved)."""
        return {str(name) for name in self.lua.globals().keys()}  # noqa: SIM118

    def call(self, *args: Any) -> tuple[Any, ...]:
        """CallByParam: arguments as decodeValue makes them; raw Lua results."""
        result = self._fn(*(self.to_lua(arg) for arg in args))
        return result if isinstance(result, tuple) else (result,)

    # Python -> Lua: decodeValue / luajson.Decode (JSON semantics).
    def to_lua(self, value: Any) -> Any:
        if isinstance(value, Mapping):
            table = self.lua.table()
            for key, item in value.items():
                if item is not None:
                    table[str(key)] = self.to_lua(item)
            return table
        if isinstance(value, (list, tuple)):
            table = self.lua.table()
            index = 1
            for item in value:
                if item is not None:  # LTable.Append ignores nil
                    table[index] = self.to_lua(item)
                    index += 1
            return table
        return value

    # Lua -> Python: luajson.Encode.
    def to_python(self, value: Any, visited: set[str] | None = None) -> Any:
        kind = lua51.lua_type(value)
        if kind is None:
            if isinstance(value, float) and value.is_integer():
                return int(value)
            return value
        if kind != "table":
            raise LuaConversionError(f"cannot encode {kind} to JSON")
        visited = set() if visited is None else visited
        identity = self._identity(value)
        if identity in visited:
            raise LuaConversionError("cannot encode recursively nested tables to JSON")
        visited.add(identity)
        items = list(value.items())
        if not items:
            return []
        keys = [key for key, _ in items]
        if all(isinstance(k, str) for k in keys):
            return {k: self.to_python(v, visited) for k, v in items}
        if all(isinstance(k, (int, float)) and not isinstance(k, bool) for k in keys):
            if sorted(keys) != list(range(1, len(keys) + 1)):
                raise LuaConversionError("cannot encode sparse array")
            return [self.to_python(v, visited) for _, v in sorted(items)]
        raise LuaConversionError("cannot encode mixed or invalid key types")

    def convert(self, value: Any, is_struct: bool, *references: Any) -> Any:
        """ConvertLuaResultInto: encode, then put back or drop empty tables."""
        return convert_empty(self.to_python(value), is_struct, references)

    # The kube module (kube.go).
    def _accurate_pod_requirements(self, *args: Any) -> Any:
        if len(args) != 1:
            raise LuaConversionError("getPodRequirements only accepts one argument")
        if lua51.lua_type(args[0]) != "table":
            raise TypeError("bad argument #1 (table expected)")
        template = self.convert(args[0], True)
        return self.to_lua(generate_replica_requirements(template))

    def _get_pod_dependencies(self, *args: Any) -> Any:
        if len(args) != 2:
            raise LuaConversionError("getPodDependencies only accepts two argument")
        if lua51.lua_type(args[0]) != "table":
            raise TypeError("bad argument #1 (table expected)")
        namespace = args[1]
        if namespace is None:
            namespace = "default"
        elif isinstance(namespace, (int, float)) and not isinstance(namespace, bool):
            namespace = str(namespace)
        elif not isinstance(namespace, str):
            raise TypeError("bad argument #2 (string expected)")
        template = self.convert(args[0], True)
        return self.to_lua(pod_dependencies(template, namespace))

    def _resource_add(self, *args: Any) -> str:
        total = Quantity(Fraction(0), "")
        for arg in args:
            if arg is None:
                continue
            if not isinstance(arg, str):
                raise TypeError("bad argument (string expected)")
            quantity = Quantity.parse(arg)
            if total.value == 0:  # Quantity.Add keeps the format of what it adds to zero
                total.fmt = quantity.fmt
            total.value += quantity.value
        return str(total)

    def _get_resource_quantity(self, *args: Any) -> float:
        if len(args) != 1:
            raise LuaConversionError("getResourceQuantity only accepts one argument")
        value = float(Quantity.parse(args[0]).value) if args[0] is not None else 0.0
        if value < 0 or math.isinf(value):
            raise LuaConversionError(f"int approximation unexpectedly returned {value}")
        return value


class LuaInterpreter:
    """The operations of lua.go over a set of scripts, each call on a fresh VM."""

    def __init__(self, scripts: Mapping[str, str], *, strict: bool = True) -> None:
        self.scripts = dict(scripts)
        self.strict = strict

    def vm(self, customization: str, function: str) -> LuaVM:
        return LuaVM(self.scripts[customization], function, strict=self.strict)

    def get_replicas(self, obj: Mapping[str, Any]) -> tuple[int, dict[str, Any] | None]:
        vm = self.vm("replicaResource", "GetReplicas")
        replica, requirement = (*vm.call(obj), None, None)[:2]
        if (
            lua51.lua_type(replica) is not None
            or isinstance(replica, bool)
            or not isinstance(replica, (int, float))
        ):
            raise LuaConversionError(f"result type {replica!r} is not number")
        if requirement is None:
            return int(replica), None
        if lua51.lua_type(requirement) != "table":
            raise LuaConversionError("expect the returned requires type is table")
        return int(replica), vm.convert(requirement, True)

    def revise_replica(self, obj: Mapping[str, Any], replicas: int) -> dict[str, Any]:
        vm = self.vm("replicaRevision", "ReviseReplica")
        return self._table(vm, vm.call(obj, replicas)[0], obj)

    def reflect_status(self, obj: Mapping[str, Any] | None) -> dict[str, Any]:
        vm = self.vm("statusReflection", "ReflectStatus")
        return self._table(vm, vm.call(obj)[0])

    def aggregate_status(
        self, obj: Mapping[str, Any], items: list[dict[str, Any]] | None
    ) -> dict[str, Any]:
        vm = self.vm("statusAggregation", "AggregateStatus")
        return self._table(vm, vm.call(obj, items)[0])

    def interpret_health(self, obj: Mapping[str, Any] | None) -> bool:
        vm = self.vm("healthInterpretation", "InterpretHealth")
        healthy = vm.call(obj)[0]
        if not isinstance(healthy, bool):
            raise LuaConversionError(f"result type {healthy!r} is not bool")
        return healthy

    def get_dependencies(self, obj: Mapping[str, Any]) -> list[dict[str, Any]]:
        vm = self.vm("dependencyInterpretation", "GetDependencies")
        result = vm.call(obj)[0]
        if lua51.lua_type(result) != "table":
            raise LuaConversionError("expect the returned requires type is table")
        dependencies = vm.convert(result, False)
        if not isinstance(dependencies, list):
            raise LuaConversionError("cannot unmarshal object into []DependentObjectReference")
        return dependencies

    @staticmethod
    def _table(vm: LuaVM, result: Any, *references: Any) -> dict[str, Any]:
        if lua51.lua_type(result) != "table":
            raise LuaConversionError("expect the returned requires type is table")
        converted = vm.convert(result, True, *references)
        if not isinstance(converted, dict):
            raise LuaConversionError("cannot unmarshal array into an object")
        return converted

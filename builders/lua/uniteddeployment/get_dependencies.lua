-- dependencyInterpretation for apps.kruise.io/v1alpha1 UnitedDeployment (OpenKruise v1.9.0).
-- ConfigMaps, Secrets, ServiceAccount and PVCs referenced by the real pod template and by the
-- subsets' patches (Kruise strategic-merges each patch into that subset's pod template).
local kube = require("kube")

function GetDependencies(desiredObj)
  local refs = {}
  local seen = {}
  local namespace = desiredObj.metadata and desiredObj.metadata.namespace
  -- kube.getPodDependencies returns nil, not an empty table, when nothing is referenced.
  local function add(dependencies)
    if dependencies == nil then
      return
    end
    for _, dependency in ipairs(dependencies) do
      local key = dependency.kind .. "/" .. dependency.name
      if not seen[key] then
        seen[key] = true
        refs[#refs + 1] = dependency
      end
    end
  end

  local template = podTemplate(desiredObj)
  if template ~= nil then
    add(kube.getPodDependencies(template, namespace))
  end
  local topology = desiredObj.spec and desiredObj.spec.topology
  if topology ~= nil and topology.subsets ~= nil then
    for _, subset in ipairs(topology.subsets) do
      if type(subset.patch) == "table" then
        -- A patch that does not decode as a pod template only loses its own references.
        local ok, dependencies = pcall(kube.getPodDependencies, subset.patch, namespace)
        if ok then
          add(dependencies)
        end
      end
    end
  end
  -- Karmada rejects a nil result, so an empty list is returned as an empty table.
  return refs
end

-- statusReflection for apps.kruise.io/v1alpha1 UnitedDeployment (OpenKruise v1.9.0).
-- Reports only fields a real UnitedDeployment status has (no availableReplicas), plus the
-- member's generation and the template generation it was built from, for AggregateStatus.
local COUNTERS = { "replicas", "readyReplicas", "updatedReplicas", "updatedReadyReplicas", "reservedPods" }

local function copySubsetStatuses(items)
  local copies = {}
  for _, item in ipairs(items) do
    copies[#copies + 1] = {
      name = item.name,
      replicas = item.replicas,
      readyReplicas = item.readyReplicas,
      partition = item.partition,
      reservedPods = item.reservedPods,
    }
  end
  return copies
end

function ReflectStatus(observedObj)
  local status = {}
  if observedObj == nil or observedObj.status == nil then
    return status
  end
  local observed = observedObj.status
  for _, field in ipairs(COUNTERS) do
    status[field] = observed[field]
  end
  status.observedGeneration = observed.observedGeneration
  status.currentRevision = observed.currentRevision
  status.labelSelector = observed.labelSelector
  status.subsetReplicas = observed.subsetReplicas
  status.conditions = observed.conditions
  if observed.subsetStatuses ~= nil then
    status.subsetStatuses = copySubsetStatuses(observed.subsetStatuses)
  end
  if observed.updateStatus ~= nil then
    status.updateStatus = {
      updatedRevision = observed.updateStatus.updatedRevision,
      currentPartitions = observed.updateStatus.currentPartitions,
    }
  end
  if observedObj.metadata ~= nil then
    status.generation = observedObj.metadata.generation
    local annotations = observedObj.metadata.annotations
    if annotations ~= nil then
      status.resourceTemplateGeneration = tonumber(annotations["resourcetemplate.karmada.io/generation"])
    end
  end
  return status
end

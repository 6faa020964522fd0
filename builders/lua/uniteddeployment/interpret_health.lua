-- healthInterpretation for apps.kruise.io/v1alpha1 UnitedDeployment (OpenKruise v1.9.0).
-- Karmada's Deployment rule (observed generation, updated >= desired, available >= updated) with
-- the fields UnitedDeployment has: updatedReadyReplicas stands in for availableReplicas, and
-- pods held back on purpose by Manual partitions do not count as missing.
function InterpretHealth(observedObj)
  if observedObj == nil or observedObj.metadata == nil or observedObj.status == nil then
    return false
  end
  local status = observedObj.status
  if status.observedGeneration == nil or status.observedGeneration ~= observedObj.metadata.generation then
    return false
  end
  if status.conditions ~= nil then
    for _, condition in ipairs(status.conditions) do
      if condition.type == "SubsetFailure" and condition.status == "True" then
        return false
      end
    end
  end
  local desired = observedObj.spec and observedObj.spec.replicas
  if desired == nil then
    desired = status.replicas or 0
  end
  local held = 0
  if status.updateStatus ~= nil and status.updateStatus.currentPartitions ~= nil then
    for _, partition in pairs(status.updateStatus.currentPartitions) do
      held = held + partition
    end
  end
  local updated = status.updatedReplicas or 0
  if updated < desired - held then
    return false
  end
  if (status.updatedReadyReplicas or 0) < updated then
    return false
  end
  return true
end

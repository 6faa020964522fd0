-- statusAggregation for apps.kruise.io/v1alpha1 UnitedDeployment (OpenKruise v1.9.0).
-- Builds the template's status afresh from the members' reflected statuses (reflect_status.lua),
-- with fields the CRD defines only. replicas, updatedReplicas and currentRevision are always set:
-- the CRD requires them and Karmada writes the result with a full UpdateStatus.
local COUNTERS = { "replicas", "readyReplicas", "updatedReplicas", "updatedReadyReplicas", "reservedPods" }
local SUBSET_COUNTERS = { "replicas", "readyReplicas", "partition", "reservedPods" }

-- Tracks whether every member reports the same value. With `strict`, a member that reports
-- nothing breaks agreement too (a revision nobody confirmed must not be claimed).
local function newConsensus(strict)
  return { strict = strict, value = nil, conflict = false }
end

local function observe(consensus, value)
  if value == nil then
    if consensus.strict then
      consensus.conflict = true
    end
  elseif consensus.value == nil then
    consensus.value = value
  elseif consensus.value ~= value then
    consensus.conflict = true
  end
end

local function settled(consensus)
  if consensus.conflict then
    return nil
  end
  return consensus.value
end

-- SubsetFailure needs attention when True; SubsetProvisioned, SubsetUpdated and
-- UnitedDeploymentUpdated when not True.
local function needsAttention(condition)
  if condition.type == "SubsetFailure" then
    return condition.status == "True"
  end
  return condition.status ~= "True"
end

local function addInto(totals, counts)
  if counts == nil then
    return totals
  end
  for name, count in pairs(counts) do
    if totals == nil then
      totals = {}
    end
    totals[name] = (totals[name] or 0) + count
  end
  return totals
end

function AggregateStatus(desiredObj, statusItems)
  local generation = (desiredObj.metadata and desiredObj.metadata.generation) or 0
  local previous = desiredObj.status or {}
  local status = { currentRevision = "" }
  for _, field in ipairs(COUNTERS) do
    status[field] = 0
  end
  local items = statusItems or {}

  local current = newConsensus(true)
  local updated = newConsensus(true)
  local selector = newConsensus(false)
  local upToDate = 0
  local subsetOrder, subsetTotals = {}, {}
  local conditionOrder, chosen = {}, {}
  local subsetReplicas, partitions = nil, nil

  for i = 1, #items do
    local item = items[i].status
    if item == nil then
      observe(current, nil)
      observe(updated, nil)
    else
      for _, field in ipairs(COUNTERS) do
        status[field] = status[field] + (item[field] or 0)
      end
      observe(current, item.currentRevision)
      observe(updated, item.updateStatus and item.updateStatus.updatedRevision)
      observe(selector, item.labelSelector)
      subsetReplicas = addInto(subsetReplicas, item.subsetReplicas)
      partitions = addInto(partitions, item.updateStatus and item.updateStatus.currentPartitions)

      for _, subset in ipairs(item.subsetStatuses or {}) do
        local totals = subsetTotals[subset.name]
        if totals == nil then
          totals = { name = subset.name }
          for _, field in ipairs(SUBSET_COUNTERS) do
            totals[field] = 0
          end
          subsetTotals[subset.name] = totals
          subsetOrder[#subsetOrder + 1] = subset.name
        end
        for _, field in ipairs(SUBSET_COUNTERS) do
          totals[field] = totals[field] + (subset[field] or 0)
        end
      end

      for _, condition in ipairs(item.conditions or {}) do
        local kept = chosen[condition.type]
        if kept == nil then
          conditionOrder[#conditionOrder + 1] = condition.type
        end
        if kept == nil or (needsAttention(condition) and not needsAttention(kept.condition)) then
          chosen[condition.type] = { condition = condition, cluster = items[i].clusterName }
        end
      end

      -- The member runs the current template generation and its controller has caught up.
      if item.resourceTemplateGeneration == generation and item.generation ~= nil
          and item.generation == item.observedGeneration then
        upToDate = upToDate + 1
      end
    end
  end

  if upToDate == #items then
    status.observedGeneration = generation
  else
    status.observedGeneration = previous.observedGeneration or 0
  end
  status.currentRevision = settled(current) or ""
  status.labelSelector = settled(selector)
  status.subsetReplicas = subsetReplicas
  if settled(updated) ~= nil or partitions ~= nil then
    status.updateStatus = { updatedRevision = settled(updated), currentPartitions = partitions }
  end
  if #subsetOrder > 0 then
    status.subsetStatuses = {}
    for _, name in ipairs(subsetOrder) do
      status.subsetStatuses[#status.subsetStatuses + 1] = subsetTotals[name]
    end
  end
  if #conditionOrder > 0 then
    status.conditions = {}
    for _, conditionType in ipairs(conditionOrder) do
      local pick = chosen[conditionType]
      local message = pick.condition.message
      if message ~= nil and message ~= "" and pick.cluster ~= nil then
        message = pick.cluster .. ": " .. message
      end
      status.conditions[#status.conditions + 1] = {
        type = conditionType,
        status = pick.condition.status,
        lastTransitionTime = pick.condition.lastTransitionTime,
        reason = pick.condition.reason,
        message = message,
      }
    end
  end
  desiredObj.status = status
  return desiredObj
end

-- replicaResource for apps.kruise.io/v1alpha1 UnitedDeployment (OpenKruise v1.9.0).
-- The pod template sits inside the workload template Kruise stamps out per subset; Karmada's
-- built-in passes spec.template (that wrapper) and so gets no requirements at all.
local kube = require("kube")

-- Without spec.replicas Kruise requires an integer on every subset, and runs their sum.
local function unsetReplicas(obj)
  local total = 0
  local topology = obj.spec and obj.spec.topology
  if topology ~= nil and topology.subsets ~= nil then
    for _, subset in ipairs(topology.subsets) do
      if type(subset.replicas) == "number" then
        total = total + subset.replicas
      end
    end
  end
  return total
end

function GetReplicas(obj)
  local replica = obj.spec and obj.spec.replicas
  if replica == nil then
    replica = unsetReplicas(obj)
  end
  -- Subsets add their own nodeSelectorTerm/tolerations/patch per member; one requirement per
  -- replica cannot say "one of these", so only the shared pod template counts.
  local template = podTemplate(obj)
  local requirement = nil
  if template ~= nil then
    requirement = kube.accuratePodRequirements(template)
  end
  return replica, requirement
end

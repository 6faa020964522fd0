-- Shared by the scripts that need the pod template (builders/interpreter.py prepends it): it
-- sits inside whichever workload template the UnitedDeployment stamps out per subset.
-- Same precedence as Kruise's getSubsetControls: StatefulSet, Advanced StatefulSet, CloneSet, Deployment.
local TEMPLATE_KINDS = { "statefulSetTemplate", "advancedStatefulSetTemplate", "cloneSetTemplate", "deploymentTemplate" }

local function podTemplate(obj)
  local templates = obj.spec and obj.spec.template
  if templates == nil then
    return nil
  end
  for _, kind in ipairs(TEMPLATE_KINDS) do
    local workload = templates[kind]
    if workload ~= nil then
      return workload.spec and workload.spec.template
    end
  end
  return nil
end

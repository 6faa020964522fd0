-- replicaRevision for apps.kruise.io/v1alpha1 UnitedDeployment (OpenKruise v1.9.0).
-- Karmada sets each member's share as spec.replicas; Kruise in the member then splits it over the
-- subsets (percentages scale with it, fixed integers do not).
function ReviseReplica(obj, desiredReplica)
  if obj.spec == nil then
    obj.spec = {}
  end
  obj.spec.replicas = desiredReplica
  return obj
end

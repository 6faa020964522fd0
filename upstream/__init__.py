"""Facts and syntax transcribed from pinned upstream sources; imports nothing of the project.

Each module names its source and tag: Kubernetes value syntax (`k8s`), per-version Kueue facts
(`kueue`), Karmada and OpenKruise facts (`karmada`), AKS VM shapes and node reservations (`aks`),
and the upstream placement algorithms (`placement`). Every rule here is written once and used by
config types, builders and checks alike.
"""

"""Pure builders: config -> plain data (Kubernetes objects, Helm values, request shapes, capacity).

No Pulumi imports and no I/O here; tests validate this output against upstream schemas and the
offline preflight renders it.
"""

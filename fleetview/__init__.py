"""`python -m fleetview`: where every job of a live fleet is, and why (docs/observability.md).

Read-only. `snapshot` is pure (API objects in -> rows and explanations out, offline-testable);
`fetch` is the only module that talks to clusters (the `kubernetes` client, imported lazily).
"""

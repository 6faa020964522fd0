"""`python -m fleetview`: where every job of a live fleet is, and why (docs/observability.md).

Read-only. `snapshot` is pure (API objects in -> rows and explanations out, offline-testable);
`fetch` is the only module that talks to clusters (the `kubernetes` client, imported lazily).
"""

import environment

# First, before Python compiles any module of the package: a Python without the project's
# packages (or too old for its syntax) gets the command to run instead of a traceback.
environment.require("fleetview")

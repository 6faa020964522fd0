"""Offline preflight: validate a stack's config, print its plan, render its manifests.

Needs no Pulumi CLI, no cloud and no cluster: `python -m preflight <stack>`.
"""

import environment

# First, before Python compiles any module of the package: a Python without the project's
# packages (or too old for its syntax) gets the command to run instead of a traceback.
environment.require("preflight")

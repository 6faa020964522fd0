"""Offline preflight: validate a stack's config, print its plan, render its manifests.

Needs no Pulumi CLI, no cloud and no cluster: `python -m preflight <stack>`.
"""

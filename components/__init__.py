"""Pulumi ComponentResources, one concern each. Importing a module here creates nothing."""

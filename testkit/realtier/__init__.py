"""The real tier's machinery, a library: loopback control planes and the tools' cache (`harness`),
the stacks' loopback twins (`twin`, `twin_run`, `twin_engine`), the Azure twin (`azure_*`), the
real Pulumi engine (`engine`, `pulumi_cli`), Kueue, Karmada and Kruise on loopback, faults, jobs and
the polling waits. The real-tier tests in tests/realtier/ use it; it never imports tests/."""

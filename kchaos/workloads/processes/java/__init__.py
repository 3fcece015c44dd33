"""The release's own Java client as processes (kchaos/compose/client/*.java): each workload's command line
and settings in the Java client's words, and the Java client's outcome rules."""

"""The task catalog (the lineage root) and its job."""

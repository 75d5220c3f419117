"""The SQL models of dbt_like_sql/ as assets, and their floor and ceiling checks."""

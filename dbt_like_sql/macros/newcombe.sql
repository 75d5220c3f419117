-- Newcombe's hybrid score 95% interval of a difference pb - pa, from each side's rate and Wilson bounds (the
-- wilson macros); NULL when either side has no interval. reporting/stats.py `newcombe` is the same formula for
-- differences no model holds (two batches a user names); tests/test_sdk_comparison.py checks the two agree.
{% macro newcombe_low(pa, la, ua, pb, lb, ub) %}
({{ pb }} - {{ pa }}) - sqrt(({{ pb }} - {{ lb }}) ^ 2 + ({{ ua }} - {{ pa }}) ^ 2)
{% endmacro %}
{% macro newcombe_high(pa, la, ua, pb, lb, ub) %}
({{ pb }} - {{ pa }}) + sqrt(({{ ub }} - {{ pb }}) ^ 2 + ({{ pa }} - {{ la }}) ^ 2)
{% endmacro %}

-- The Wilson 95% score interval (z = 1.96) of a proportion p observed over n trials; NULL when n = 0. One formula
-- for every model that reports an interval (pass_rate, trends, usage_rates), called with the column names as
-- quoted arguments, e.g. wilson_low('p', 'n') in a double-brace tag.
{% macro wilson_low(p, n) %}
CASE WHEN {{ n }} > 0 THEN greatest(0.0, ({{ p }} + 1.96 ^ 2 / (2 * {{ n }})
    - 1.96 * sqrt({{ p }} * (1 - {{ p }}) / {{ n }} + 1.96 ^ 2 / (4 * {{ n }} * {{ n }}))) / (1 + 1.96 ^ 2 / {{ n }})) END
{% endmacro %}
{% macro wilson_high(p, n) %}
CASE WHEN {{ n }} > 0 THEN least(1.0, ({{ p }} + 1.96 ^ 2 / (2 * {{ n }})
    + 1.96 * sqrt({{ p }} * (1 - {{ p }}) / {{ n }} + 1.96 ^ 2 / (4 * {{ n }} * {{ n }}))) / (1 + 1.96 ^ 2 / {{ n }})) END
{% endmacro %}
